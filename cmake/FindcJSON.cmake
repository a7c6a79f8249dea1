# FindcJSON: finds cJSON by its header and library, from any prefix.
#
# cJSON's own package configuration hard-codes /usr, so it breaks when cJSON lives elsewhere
# (a CMAKE_PREFIX_PATH install, a sysroot).  This module searches the usual prefixes instead.
# Provides the imported target kt::cjson and cJSON_FOUND.
include_guard(GLOBAL)
find_path(cJSON_INCLUDE_DIR NAMES cjson/cJSON.h)
find_library(cJSON_LIBRARY NAMES cjson)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(cJSON REQUIRED_VARS cJSON_LIBRARY cJSON_INCLUDE_DIR)
if(cJSON_FOUND AND NOT TARGET kt::cjson)
  add_library(kt::cjson UNKNOWN IMPORTED)
  set_target_properties(kt::cjson PROPERTIES
    IMPORTED_LOCATION "${cJSON_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${cJSON_INCLUDE_DIR}")
endif()
mark_as_advanced(cJSON_INCLUDE_DIR cJSON_LIBRARY)
