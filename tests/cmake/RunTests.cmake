# RunTests.cmake: kt's CMake-module tests, one per ctest test, run as
#
#   cmake -DTEST=<name> -DKT_SOURCE_DIR=<kt sources> -DKT_BUILD_DIR=<kt build> -DKT_EXE=<kt tool>
#         -DKT_FAKE_EXE=<kt with the fake GPU>
#         -DWORK=<scratch dir> -DCUDA_COMPILER=<nvcc> -DMAKE_PROGRAM=<ninja> -DCPACK_COMMAND=<cpack>
#         -P RunTests.cmake
#
# Each test copies a fixture project (project/, or example_project/) into WORK, configures it with
# Ninja, and checks what happened: the exit status, the messages (regular expressions, in the
# style of CMake's RunCMake: cases/<Case>-stderr.txt), the files written, the build.  A failed
# check is a FATAL_ERROR naming what was expected and showing what came instead.
cmake_minimum_required(VERSION 3.25)

foreach(var TEST KT_SOURCE_DIR KT_BUILD_DIR KT_EXE WORK)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "RunTests.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT CUDA_COMPILER)
  message("kt-test: skipped: no CUDA compiler was found when kt was configured")
  return()
endif()
set(FIXTURE "${CMAKE_CURRENT_LIST_DIR}/project")
set(KT_TREE "${WORK}/kt") # the kt that the fixtures add_subdirectory(): see snapshot_kt()

# ---- helpers ------------------------------------------------------------------------------

# Runs a command in WORK; sets <prefix>_rc and <prefix>_out (stdout and stderr together).
function(run prefix)
  string(REPLACE ";" " " shown "${ARGN}")
  message(STATUS "kt-test: ${shown}")
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY "${WORK}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  set(${prefix}_rc "${rc}" PARENT_SCOPE)
  set(${prefix}_out "${out}" PARENT_SCOPE)
endfunction()

function(fail what output)
  message(FATAL_ERROR "kt-test ${TEST}: ${what}\n---- output ----\n${output}\n----------------")
endfunction()

# Fixtures use a snapshot of kt's sources (KT_TREE), so that a test does not depend on edits made
# to them while it runs, and sees its own configure dependencies only.
function(snapshot_kt)
  foreach(part CMakeLists.txt cmake docs generator templates cache)
    if(EXISTS "${KT_SOURCE_DIR}/${part}")
      file(COPY "${KT_SOURCE_DIR}/${part}" DESTINATION "${KT_TREE}")
    endif()
  endforeach()
endfunction()

# Copies a project into WORK/<dir>, fresh.
function(copy_project from dir)
  file(REMOVE_RECURSE "${WORK}/${dir}")
  file(COPY "${from}/" DESTINATION "${WORK}/${dir}" PATTERN "build" EXCLUDE)
endfunction()

# Configures WORK/<src> into WORK/<build>; extra arguments are -D options.  Sets cfg_rc, cfg_out.
function(configure src build)
  run(cfg "${CMAKE_COMMAND}" -S "${WORK}/${src}" -B "${WORK}/${build}" -G Ninja
    "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}" "-DCMAKE_CUDA_COMPILER=${CUDA_COMPILER}"
    "-DKT_SOURCE_DIR=${KT_TREE}" "-DKT_CACHE_DIR=${WORK}/user-cache" -DKT_TUNE=OFF ${ARGN})
  set(cfg_rc "${cfg_rc}" PARENT_SCOPE)
  set(cfg_out "${cfg_out}" PARENT_SCOPE)
endfunction()

function(expect_ok prefix what)
  if(NOT "${${prefix}_rc}" STREQUAL "0")
    fail("${what} failed (${${prefix}_rc})" "${${prefix}_out}")
  endif()
endfunction()

# CMake wraps the lines of its messages; so the output also matches when it matches with every run
# of blanks and newlines made one blank.
function(expect_match prefix regex what)
  string(REGEX REPLACE "[ \n]+" " " flat "${${prefix}_out}")
  if(NOT "${${prefix}_out}" MATCHES "${regex}" AND NOT flat MATCHES "${regex}")
    fail("${what}: the output does not match\n  ${regex}" "${${prefix}_out}")
  endif()
endfunction()

# Configures, builds and runs the fixture with case Scale (the good call).
function(build_fixture)
  configure(src build -DKT_CASE=Scale ${ARGN})
  expect_ok(cfg "configure")
  run(bld "${CMAKE_COMMAND}" --build "${WORK}/build")
  expect_ok(bld "build")
  run(app "${WORK}/build/fixture_app")
  expect_ok(app "fixture_app")
  expect_match(app "fixture_app: (ok|no CUDA GPU)" "fixture_app")
  foreach(f kt_scale.h kt_scale.cu kt_scale.json kt_scale.cmake)
    if(NOT EXISTS "${WORK}/build/kt/scale/${f}")
      fail("kt generate did not write ${f}" "${cfg_out}")
    endif()
  endforeach()
  set(cfg_out "${cfg_out}" PARENT_SCOPE)
endfunction()

# ---- the tests ----------------------------------------------------------------------------

# kt through add_subdirectory(): the tool is built from source at configure time, once.
function(test_add_subdirectory)
  copy_project("${FIXTURE}" src)
  build_fixture(-DKT_FIXTURE_MODE=subdir)
  expect_match(cfg "kt-fixture: KT_TEMPLATES_DIR=[^\n]*/kt/templates\n" "first configure")
  expect_match(cfg "kt: building the kt tool in" "first configure")
  if(NOT EXISTS "${WORK}/build/kt-tool/generator/kt")
    fail("the kt tool was not built in build/kt-tool" "${cfg_out}")
  endif()
  configure(src build)
  expect_ok(cfg "second configure")
  if(cfg_out MATCHES "building the kt tool")
    fail("the second configure built the kt tool again" "${cfg_out}")
  endif()
endfunction()

# kt through find_package(): install this build of kt into a prefix first.
function(test_package)
  file(REMOVE_RECURSE "${WORK}/prefix")
  run(inst "${CMAKE_COMMAND}" --install "${KT_BUILD_DIR}" --prefix "${WORK}/prefix")
  expect_ok(inst "cmake --install")
  copy_project("${FIXTURE}" src)
  build_fixture(-DKT_FIXTURE_MODE=package "-DCMAKE_PREFIX_PATH=${WORK}/prefix")
  expect_match(cfg "kt-fixture: package from [^\n]*/prefix/" "configure")
  expect_match(cfg "kt-fixture: KT_TEMPLATES_DIR=[^\n]*/prefix/share/kt/templates\n" "configure")
  if(NOT EXISTS "${WORK}/prefix/bin/kt")
    fail("kt was not installed into prefix/bin" "${inst_out}")
  endif()
endfunction()

# kt through FetchContent, the way most projects take a dependency: a git repository of the
# snapshot, fetched at its commit.  The parent gets kt_add_tuned_kernel() and KT_TEMPLATES_DIR, and
# the module its tool (built in build/kt-tool); kt's own build stays out of the parent's: no
# dependency lookup in its configure, nothing of kt built by its default target, no install rule.
function(test_fetchcontent)
  find_program(GIT git)
  if(NOT GIT)
    message("kt-test: skipped: no git, which FetchContent clones kt with")
    return()
  endif()
  set(git "${GIT}" -C "${KT_TREE}" -c user.name=kt-test -c user.email=kt-test@example.invalid
    -c commit.gpgsign=false)
  foreach(step "init -q" "add -A" "commit -q -m snapshot")
    separate_arguments(step UNIX_COMMAND "${step}")
    run(repo ${git} ${step})
    expect_ok(repo "git ${step}")
  endforeach()
  run(repo ${git} rev-parse HEAD)
  expect_ok(repo "git rev-parse HEAD")
  string(STRIP "${repo_out}" commit)
  copy_project("${FIXTURE}" src)
  build_fixture(-DKT_FIXTURE_MODE=fetchcontent "-DKT_GIT_REPOSITORY=${KT_TREE}" "-DKT_GIT_TAG=${commit}")
  expect_match(cfg "kt-fixture: KT_TEMPLATES_DIR=[^\n]*/_deps/kt-src/templates\n" "configure")
  expect_match(cfg "kt: building the kt tool in" "configure")
  if(cfg_out MATCHES "Found (cJSON|xxHash|CURL)")
    fail("kt's configure as a subproject looked for the tool's dependencies" "${cfg_out}")
  endif()
  if(NOT EXISTS "${WORK}/build/kt-tool/generator/kt")
    fail("the kt tool was not built in build/kt-tool" "${cfg_out}")
  endif()
  set(sub "${WORK}/build/_deps/kt-build")
  file(GLOB_RECURSE built "${sub}/*.o" "${sub}/*.a")
  file(READ "${WORK}/build/.ninja_log" log) # every output the build made
  if(EXISTS "${sub}/generator/kt" OR built OR log MATCHES "_deps/kt-build/")
    fail("the default build built kt's own targets in _deps/kt-build: ${built}" "${log}")
  endif()
  file(READ "${sub}/cmake_install.cmake" rules)
  if(rules MATCHES "ktConfig|ktTargets|templates")
    fail("kt added install rules to the parent project" "${rules}")
  endif()
endfunction()

# kt as a Debian package: `cpack -G DEB` of this build, unpacked with `dpkg -x` into a scratch root
# (the package's dependencies are this machine's), found there through find_package(kt) by the
# fixture, which generates its kernels (with template defaults) and builds; one of them is a
# template installed with the package.
function(test_deb)
  find_program(DPKG dpkg)
  if(NOT DPKG)
    message("kt-test: skipped: no dpkg, which unpacks the .deb")
    return()
  endif()
  run(pack "${CPACK_COMMAND}" -G DEB --config "${KT_BUILD_DIR}/CPackConfig.cmake" -B "${WORK}/pkg")
  expect_ok(pack "cpack -G DEB")
  file(GLOB deb "${WORK}/pkg/kt_*.deb")
  list(LENGTH deb n)
  if(NOT n EQUAL 1)
    fail("cpack -G DEB made ${n} files kt_*.deb in ${WORK}/pkg, not one" "${pack_out}")
  endif()
  run(fields dpkg-deb --field "${deb}" Package Depends)
  expect_ok(fields "dpkg-deb --field")
  expect_match(fields "Package: kt
" "the package's name")
  foreach(dep libc6 libcjson1 libxxhash0 libcurl4 "cmake \\(>= 3\\.25\\)" ninja-build)
    expect_match(fields "Depends:[^
]* ${dep}(,|
|$)" "the package's dependencies")
  endforeach()
  run(x "${DPKG}" -x "${deb}" "${WORK}/root")
  expect_ok(x "dpkg -x")
  set(usr "${WORK}/root/usr")
  file(GLOB_RECURSE config RELATIVE "${usr}" "${usr}/*/ktConfig.cmake")
  foreach(f bin/kt share/kt/templates/rmsnorm.cu.tmpl share/doc/kt/template-language.md)
    if(NOT EXISTS "${usr}/${f}")
      fail("the .deb holds no /usr/${f}" "${config}")
    endif()
  endforeach()
  if(NOT config MATCHES "^lib/")
    fail("the .deb holds no ktConfig.cmake under /usr/lib" "${config}")
  endif()
  run(check "${usr}/bin/kt" check "${usr}/share/kt/templates/rmsnorm.cu.tmpl")
  expect_ok(check "the packaged kt check on a packaged template")
  copy_project("${FIXTURE}" src)
  build_fixture(-DKT_FIXTURE_MODE=package "-DCMAKE_PREFIX_PATH=${usr}" -DKT_CASE=Installed)
  expect_match(cfg "kt-fixture: package from [^
]*/root/usr/lib/" "configure")
  expect_match(cfg "kt-fixture: KT_TEMPLATES_DIR=[^
]*/root/usr/share/kt/templates
" "configure")
  foreach(f kt_rmsnorm.h kt_rmsnorm.cu)
    if(NOT EXISTS "${WORK}/build/kt/rmsnorm/${f}")
      fail("kt generate did not write ${f} from the packaged template" "${cfg_out}")
    endif()
  endforeach()
endfunction()

# The bad calls, cases/<Case>.cmake with cases/<Case>-stderr.txt: each configure fails with the
# message that the regular expression of <Case>-stderr.txt matches, and leaves no files in the
# kernel's output directory.  One build tree for all, so the compilers are detected once.
function(test_errors)
  copy_project("${FIXTURE}" src)
  file(GLOB expectations "${FIXTURE}/cases/*-stderr.txt")
  set(failed "")
  foreach(expectation IN LISTS expectations)
    get_filename_component(case "${expectation}" NAME)
    string(REGEX REPLACE "-stderr\\.txt$" "" case "${case}")
    file(REMOVE_RECURSE "${WORK}/build/kt")
    configure(src build -DKT_FIXTURE_MODE=subdir "-DKT_CASE=${case}" "-DKT_EXECUTABLE=${KT_EXE}")
    file(READ "${expectation}" regex)
    string(REGEX REPLACE "\n$" "" regex "${regex}")
    string(REPLACE "\\n" "\n" regex "${regex}")
    string(REGEX REPLACE "[ \n]+" " " flat "${cfg_out}")
    file(GLOB_RECURSE left "${WORK}/build/kt/scale/*")
    if("${cfg_rc}" STREQUAL "0")
      set(why "the configure succeeded; it must fail")
    elseif(NOT cfg_out MATCHES "${regex}" AND NOT flat MATCHES "${regex}")
      set(why "the output does not match\n  ${regex}")
    elseif(left AND NOT case STREQUAL "DuplicateName") # (there the first call succeeds)
      set(why "files were left in build/kt/scale: ${left}")
    else()
      message(STATUS "kt-test: case ${case}: ok")
      continue()
    endif()
    message(NOTICE "kt-test: case ${case}: ${why}\n---- output ----\n${cfg_out}\n----------------")
    list(APPEND failed "${case}")
  endforeach()
  list(LENGTH expectations n)
  if(n LESS 10)
    fail("only ${n} error cases found in ${FIXTURE}/cases" "")
  endif()
  if(failed)
    fail("failed cases: ${failed}" "(above)")
  endif()
endfunction()

# Editing the template makes the next build re-run the configure and so the generation: a new
# default block size (used where there is no GPU and no cached configuration) reaches the manifest
# and the build.
function(test_reconfigure_on_edit)
  copy_project("${FIXTURE}" src)
  build_fixture(-DKT_FIXTURE_MODE=subdir "-DKT_EXECUTABLE=${KT_EXE}")
  set(manifest "${WORK}/build/kt/scale/kt_scale.json")
  run(mf "${CMAKE_COMMAND}" -E cat "${manifest}")
  expect_match(mf "\"BLOCK\":[ \t]*256" "the manifest before the edit")
  run(bld "${CMAKE_COMMAND}" --build "${WORK}/build")
  expect_ok(bld "second build")
  if(bld_out MATCHES "Re-running CMake")
    fail("a build with nothing changed re-ran CMake" "${bld_out}")
  endif()
  file(READ "${WORK}/src/scale.cu.tmpl" tmpl)
  string(REPLACE "BLOCK in 128, 256 default 256" "BLOCK in 128, 256 default 128" tmpl "${tmpl}")
  string(REPLACE "out[i] = 2.0f * x[i];" "out[i] = x[i] + x[i]; // edited" tmpl "${tmpl}")
  file(WRITE "${WORK}/src/scale.cu.tmpl" "${tmpl}")
  run(bld "${CMAKE_COMMAND}" --build "${WORK}/build")
  expect_ok(bld "build after the edit")
  expect_match(bld "Re-running CMake" "build after the edit")
  expect_match(bld "kt: generating scale" "build after the edit")
  expect_match(bld "Linking [A-Z]+ executable fixture_app" "build after the edit")
  run(mf "${CMAKE_COMMAND}" -E cat "${manifest}")
  expect_match(mf "\"BLOCK\":[ \t]*128" "the manifest after the edit")
  run(app "${WORK}/build/fixture_app")
  expect_ok(app "fixture_app after the edit")
endfunction()

# The example project, configured, built and run as its README says.
function(test_example_project)
  copy_project("${KT_SOURCE_DIR}/example_project" example)
  configure(example build "-DKT_EXECUTABLE=${KT_EXE}")
  expect_ok(cfg "configure of example_project")
  run(bld "${CMAKE_COMMAND}" --build "${WORK}/build")
  expect_ok(bld "build of example_project")
  run(app "${WORK}/build/example_app")
  expect_ok(app "example_app")
  expect_match(app "example_app: (no CUDA GPU found|all results within tolerance)" "example_app")
endfunction()

# A template's option passed through TYPES: merge_attn_states generated with its log-sum-exps in
# natural log (the default) and in base 2 (LSE=base2), each variant compiled with its choice, the
# manifests naming it, and option_app checking both against a double-precision CPU reference
# (where there is a GPU; without one it says so).
function(test_option)
  copy_project("${FIXTURE}" src)
  configure(src build -DKT_FIXTURE_MODE=subdir -DKT_CASE=Option "-DKT_EXECUTABLE=${KT_EXE}")
  expect_ok(cfg "configure")
  run(bld "${CMAKE_COMMAND}" --build "${WORK}/build")
  expect_ok(bld "build")
  foreach(name_choice mas_e:natural mas_2:base2)
    string(REPLACE ":" ";" nc "${name_choice}")
    list(GET nc 0 name)
    list(GET nc 1 choice)
    run(mf "${CMAKE_COMMAND}" -E cat "${WORK}/build/kt/${name}/kt_${name}.json")
    expect_match(mf "\"options\":[ \t]*{[ \t\n]*\"LSE\":[ \t]*\"${choice}\"" "the manifest of ${name}")
    file(GLOB variants "${WORK}/build/kt/${name}/kt_${name}_*.cu")
    if(NOT variants)
      fail("no variant of ${name} was generated" "${cfg_out}")
    endif()
    foreach(v IN LISTS variants)
      file(READ "${v}" text)
      if(NOT text MATCHES "#define LSE ${choice}\n" OR NOT text MATCHES "#define LSE_IS_${choice} 1\n")
        fail("${v} is not compiled with LSE=${choice}" "${text}")
      endif()
    endforeach()
  endforeach()
  run(app "${WORK}/build/option_app")
  expect_ok(app "option_app")
  expect_match(app "option_app: (ok|no CUDA GPU)" "option_app")
endfunction()

# Every kt_add_tuned_kernel() of a configure, whatever its directory, is generated by one kt run at
# the end of the configure (their misses tuned in one pipeline); each target gets its own sources.
function(test_batch)
  copy_project("${FIXTURE}" src)
  configure(src build -DKT_FIXTURE_MODE=subdir -DKT_CASE=Batch)
  expect_ok(cfg "configure")
  string(REGEX MATCHALL "kt: generating [^\n]*" runs "${cfg_out}")
  if(NOT runs STREQUAL "kt: generating scale, scale_sub")
    fail("expected one kt generate run for both kernels, got: ${runs}" "${cfg_out}")
  endif()
  foreach(f kt/scale/kt_scale.h batch_sub/kt/scale_sub/kt_scale_sub.h)
    if(NOT EXISTS "${WORK}/build/${f}")
      fail("kt generate did not write ${f}" "${cfg_out}")
    endif()
  endforeach()
  run(bld "${CMAKE_COMMAND}" --build "${WORK}/build")
  expect_ok(bld "build")
  file(GLOB_RECURSE objs "${WORK}/build/batch_sub/*kt_scale_sub*.o")
  if(NOT objs)
    fail("the sub directory's library compiled no kt_scale_sub source" "${bld_out}")
  endif()
endfunction()

# L2 and LAUNCH reach kt generate: the kernel's block of the batch file passes them on (kt generate
# then times, keys and records as they say: generate.measure), a kernel without them passes none.
function(test_measure)
  copy_project("${FIXTURE}" src)
  configure(src build -DKT_FIXTURE_MODE=subdir -DKT_CASE=Measure "-DKT_EXECUTABLE=${KT_EXE}")
  expect_ok(cfg "configure")
  file(READ "${WORK}/build/kt/batch.txt" batch)
  string(FIND "${batch}" "\n--\n" cut)
  string(SUBSTRING "${batch}" 0 ${cut} first)
  string(SUBSTRING "${batch}" ${cut} -1 rest)
  if(NOT first MATCHES "--name\nscale\n" OR NOT first MATCHES "\n--l2\nwarm\n" OR NOT first MATCHES "\n--launch\ngraph\n"
     OR rest MATCHES "--l2|--launch")
    fail("expected --l2 warm and --launch graph in scale's block of the batch file, and only there" "${batch}")
  endif()
endfunction()

# A PyTorch extension's flags: find_package(Torch) puts -gencode flags into CMAKE_CUDA_FLAGS and
# turns CMAKE_CUDA_ARCHITECTURES off.  kt keeps them out of its compiles and its keys, so the
# committed NVIDIA H200 records hit (KT_REQUIRE_CACHE_HIT; also without KT_GPUS, through KT_GPU,
# where no GPU is here); kt's rule builds the H200's table for
# sm_90 alone, the project's own code keeps the project's flags.  A flag that changes the code
# (-D__CUDA_NO_HALF_OPERATORS__, as PyTorch's own builds pass) keys the records apart: a miss, and
# the error says which field differs.
function(test_torch_flags)
  copy_project("${FIXTURE}" src)
  set(torch_flags "-gencode arch=compute_90a,code=sm_90a")
  # KT_GPUS rather than KT_GPU, which a GPU here would overrule: the test runs on GPU machines too.
  set(common -DKT_FIXTURE_MODE=subdir -DKT_CASE=Torch "-DKT_EXECUTABLE=${KT_EXE}" -DCMAKE_CUDA_ARCHITECTURES=OFF
    "-DKT_GPUS=NVIDIA H200" -DKT_REQUIRE_CACHE_HIT=ON "-DKT_PROJECT_CACHE=${KT_TREE}/cache")
  configure(src build ${common} "-DCMAKE_CUDA_FLAGS=${torch_flags}")
  expect_ok(cfg "configure with Torch's flags")
  run(mf "${CMAKE_COMMAND}" -E cat "${WORK}/build/kt/rmsnorm/kt_rmsnorm.json")
  string(JSON o0 GET "${mf_out}" shapes 0 origin)
  string(JSON o1 GET "${mf_out}" shapes 1 origin)
  string(JSON gpu GET "${mf_out}" tables 0 gpu)
  string(JSON arch GET "${mf_out}" tables 0 arch)
  if(NOT "${o0} ${o1} ${gpu} ${arch}" STREQUAL "cache:project cache:project NVIDIA H200 90")
    fail("expected both shapes from the project cache, in an NVIDIA H200 table for sm_90" "${mf_out}")
  endif()
  run(bld "${CMAKE_COMMAND}" --build "${WORK}/build" -v)
  expect_ok(bld "build")
  expect_match(bld "-gencode=arch=compute_90,code=sm_90[^\n]*kt_rmsnorm_[0-9a-f]+_sm90[.]cu" "kt's compile of a variant")
  string(REGEX MATCHALL "[^\n]*kt_rmsnorm_[0-9a-f]+_sm90[.]cu -o[^\n]*" kt_lines "${bld_out}")
  if(kt_lines MATCHES "compute_90a")
    fail("the project's -gencode flags reached kt's compile of a variant" "${kt_lines}")
  endif()
  expect_match(bld "-gencode arch=compute_90a,code=sm_90a[^\n]*torch_main[.]cu" "the project's own compile")
  run(app "${WORK}/build/fixture_app")
  expect_ok(app "fixture_app")
  expect_match(app "fixture_app: (ok \\(table: NVIDIA H|no CUDA GPU)" "fixture_app")

  # Where no GPU is here, KT_GPU names the GPU as well (CI's way).
  run(gpus "${KT_EXE}" generate --list-gpus)
  configure(src build-ci -DKT_FIXTURE_MODE=subdir -DKT_CASE=Torch "-DKT_EXECUTABLE=${KT_EXE}" -DCMAKE_CUDA_ARCHITECTURES=OFF
    "-DKT_GPU=NVIDIA H200" -DKT_REQUIRE_CACHE_HIT=ON "-DKT_PROJECT_CACHE=${KT_TREE}/cache" "-DCMAKE_CUDA_FLAGS=${torch_flags}")
  if(NOT cfg_rc EQUAL 0 AND NOT cfg_out MATCHES "no cached configuration for GPU 'NVIDIA H[0-9]")
    fail("configure with KT_GPU" "${cfg_out}")
  endif()
  configure(src build-nohalf ${common} "-DCMAKE_CUDA_FLAGS=${torch_flags} -D__CUDA_NO_HALF_OPERATORS__")
  if(cfg_rc EQUAL 0)
    fail("-D__CUDA_NO_HALF_OPERATORS__ should key the records apart: a miss" "${cfg_out}")
  endif()
  expect_match(cfg "2 of 2 shapes of rmsnorm have no cached configuration for GPU 'NVIDIA H200'" "the miss")
  expect_match(cfg "differs in flags: here '-D__CUDA_NO_HALF_OPERATORS__', in the record ''" "the miss")
endfunction()

# Records of the fixture's scale template for GPU model <gpu>, tuned by kt-fake (the fake GPU as
# that model, the fake compiler answering as the real one, so that the keys are the real one's),
# in the user cache of the fixture's configures.
function(fake_records gpu)
  run(fr "${CMAKE_COMMAND}" -E env KT_TEST_GPU_BACKEND=fake "KT_FAKE_GPU_NAME=${gpu}"
    "KT_FAKE_NVCC_VERSION_OF=${CUDA_COMPILER}" "${KT_FAKE_EXE}" generate --template "${WORK}/src/scale.cu.tmpl"
    --name scale --out "${WORK}/fake-out" --shape n=1024 --shape n=65536
    --nvcc "${KT_SOURCE_DIR}/tests/unit/fake/fake_nvcc.py" --cache-dir "${WORK}/user-cache" --quiet)
  expect_ok(fr "tuning the scale template on the fake GPU as ${gpu}")
endfunction()

# Checks the manifest of the scale kernel in <build>: one table per GPU of <gpus>, each for its
# target in <archs>, in order.
function(expect_tables build gpus archs)
  run(mf "${CMAKE_COMMAND}" -E cat "${WORK}/${build}/kt/scale/kt_scale.json")
  string(JSON n LENGTH "${mf_out}" tables)
  list(LENGTH gpus want)
  if(NOT n EQUAL want)
    fail("expected ${want} tables, one per GPU of ${gpus}" "${mf_out}")
  endif()
  set(i 0)
  foreach(gpu arch IN ZIP_LISTS gpus archs)
    string(JSON g GET "${mf_out}" tables ${i} gpu)
    string(JSON a GET "${mf_out}" tables ${i} arch)
    if(NOT g STREQUAL gpu OR NOT a STREQUAL arch)
      fail("table ${i}: expected ${gpu} built for sm_${arch}, got ${g} for sm_${a}" "${mf_out}")
    endif()
    math(EXPR i "${i} + 1")
  endforeach()
endfunction()

# One build for several GPU models (KT_GPUS), from their records, none of them here: a table per
# GPU, each built for its own target.  Two Hopper GPUs with CMAKE_CUDA_ARCHITECTURES 90; then an
# A100 and an H200 with "80;90" (a fat binary: sm_80 and sm_90 objects).
function(test_gpus)
  copy_project("${FIXTURE}" src)
  foreach(gpu "NVIDIA H200" "NVIDIA H100 80GB HBM3" "NVIDIA A100-SXM4-80GB")
    fake_records("${gpu}")
  endforeach()
  set(common -DKT_FIXTURE_MODE=subdir -DKT_CASE=Scale "-DKT_EXECUTABLE=${KT_EXE}" -DKT_REQUIRE_CACHE_HIT=ON)
  # The lists go through an initial cache file, as a user's preset would pass them.
  file(WRITE "${WORK}/hopper.cmake" [[
set(CMAKE_CUDA_ARCHITECTURES 90 CACHE STRING "")
set(KT_GPUS "NVIDIA H200;NVIDIA H100 80GB HBM3" CACHE STRING "")
]])
  configure(src build ${common} -C "${WORK}/hopper.cmake")
  expect_ok(cfg "configure for two Hopper GPUs")
  expect_tables(build "NVIDIA H200;NVIDIA H100 80GB HBM3" "90;90")
  run(bld "${CMAKE_COMMAND}" --build "${WORK}/build")
  expect_ok(bld "build")
  expect_match(bld "kt: building scale's variant kt_scale_[0-9a-f]+_sm90 for sm_90" "the build")
  file(WRITE "${WORK}/fat.cmake" [[
set(CMAKE_CUDA_ARCHITECTURES "80;90" CACHE STRING "")
set(KT_GPUS "NVIDIA A100-SXM4-80GB;NVIDIA H200" CACHE STRING "")
]])
  configure(src build-fat ${common} -C "${WORK}/fat.cmake")
  expect_ok(cfg "configure for an A100 and an H200")
  expect_tables(build-fat "NVIDIA A100-SXM4-80GB;NVIDIA H200" "80;90")
  run(bld "${CMAKE_COMMAND}" --build "${WORK}/build-fat")
  expect_ok(bld "build")
  expect_match(bld "kt: building scale's variant kt_scale_[0-9a-f]+_sm80 for sm_80" "the build")
  run(app "${WORK}/build-fat/fixture_app")
  expect_ok(app "fixture_app")
  expect_match(app "fixture_app: (ok|no CUDA GPU)" "fixture_app")
  # A GPU that no record names: under KT_REQUIRE_CACHE_HIT, an error that says so.
  configure(src build-l40s ${common} "-DKT_GPUS=NVIDIA L40S")
  if(cfg_rc EQUAL 0)
    fail("a GPU without records should fail under KT_REQUIRE_CACHE_HIT" "${cfg_out}")
  endif()
  expect_match(cfg "no record in the user or project cache names this GPU" "the error")
endfunction()

# KT_TUNE_ALL_GPUS=ON reaches kt generate as --all-gpus, and only then (what kt generate does
# with it: cli.generate_gpus_*).  The kt here is a script that prints its arguments and fails.
function(test_all_gpus)
  copy_project("${FIXTURE}" src)
  file(WRITE "${WORK}/kt-args.sh" "#!/bin/sh\necho \"kt-args: $*\"\nexit 3\n")
  file(CHMOD "${WORK}/kt-args.sh" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
  foreach(value ON OFF)
    configure(src build-${value} -DKT_FIXTURE_MODE=subdir -DKT_CASE=Scale "-DKT_EXECUTABLE=${WORK}/kt-args.sh"
      -DKT_TUNE_ALL_GPUS=${value})
    expect_match(cfg "kt-args: generate --batch " "kt generate's arguments")
    if(value AND NOT cfg_out MATCHES "kt-args: generate [^\n]* --all-gpus")
      fail("KT_TUNE_ALL_GPUS=ON: expected --all-gpus among kt generate's arguments" "${cfg_out}")
    elseif(NOT value AND cfg_out MATCHES "--all-gpus")
      fail("KT_TUNE_ALL_GPUS=OFF: expected no --all-gpus" "${cfg_out}")
    endif()
  endforeach()
endfunction()

if(NOT COMMAND "test_${TEST}")
  message(FATAL_ERROR "RunTests.cmake: no test '${TEST}'")
endif()
file(REMOVE_RECURSE "${WORK}") # every run starts from nothing
file(MAKE_DIRECTORY "${WORK}")
snapshot_kt()
cmake_language(CALL "test_${TEST}")
message(STATUS "kt-test ${TEST}: passed")
