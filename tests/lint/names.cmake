# names.cmake - lint_names(<out> <text> <start> <item>): the names in a table of <text>, such as a
# C initializer or a command's help: in the lines after the first that matches <start> ("": from
# the first line), while they match <item>, the first group of <item> of each, in order.
function(lint_names out text start item)
  string(REPLACE ";" "," text "${text}") # a CMake list splits at semicolons
  string(REPLACE "\n" ";" lines "${text}")
  set(names "")
  set(in_table FALSE)
  if(start STREQUAL "")
    set(in_table TRUE)
  endif()
  foreach(line IN LISTS lines)
    if(in_table AND line MATCHES "${item}")
      list(APPEND names "${CMAKE_MATCH_1}")
    elseif(in_table)
      break()
    elseif(line MATCHES "${start}")
      set(in_table TRUE)
    endif()
  endforeach()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()
