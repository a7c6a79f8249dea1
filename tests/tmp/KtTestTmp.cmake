# KtTestTmp.cmake - every test runs with TMPDIR in the build tree, and nothing is left there.
#
#   kt_test_tmp(<dir>)   adds the two tests of the fixture `kt_tmp` (label `unit`):
#                        tmp.start (its setup): a new, empty <dir> for this run; what an earlier
#                        run left there is removed, or moved aside where it cannot be (a file in
#                        use on a network file system), so that it is never judged again;
#                        tmp.left_nothing (its cleanup, after every test that uses it): fails
#                        naming whatever this run's tests, or kt run by them, left in <dir>.
#   kt_tests_use_tmp()   gives each test of the calling directory (but the two above)
#                        TMPDIR=<dir> and the fixture; call it after adding them (test
#                        properties can be set only where a test is added).
# A partial run (ctest -R) has the fixture too, so it starts clean and is judged on its own.
# Used by tests/CMakeLists.txt, and by the fixture project of after_failed_run.cmake (its check).
include_guard(GLOBAL)

function(kt_test_tmp dir)
  set_property(GLOBAL PROPERTY KT_TEST_TMPDIR "${dir}")
  set(script "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/tmp_dir.cmake")
  add_test(NAME tmp.start COMMAND ${CMAKE_COMMAND} -DMODE=start "-DDIR=${dir}" -P "${script}")
  add_test(NAME tmp.left_nothing COMMAND ${CMAKE_COMMAND} -DMODE=check "-DDIR=${dir}" -P "${script}")
  set_tests_properties(tmp.start PROPERTIES FIXTURES_SETUP kt_tmp LABELS unit)
  set_tests_properties(tmp.left_nothing PROPERTIES FIXTURES_CLEANUP kt_tmp LABELS unit)
endfunction()

function(kt_tests_use_tmp)
  get_property(dir GLOBAL PROPERTY KT_TEST_TMPDIR)
  if(NOT dir)
    message(FATAL_ERROR "kt_tests_use_tmp: call kt_test_tmp(<dir>) first")
  endif()
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(t IN LISTS tests)
    if(NOT t MATCHES "^tmp[.](start|left_nothing)$")
      set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "TMPDIR=${dir}")
      set_property(TEST ${t} APPEND PROPERTY FIXTURES_REQUIRED kt_tmp)
    endif()
  endforeach()
endfunction()
