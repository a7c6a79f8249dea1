#[=======================================================================[.rst:
KtTunedKernel
-------------

Tuned CUDA kernels as an ordinary part of a CMake build.  A kernel written once as an annotated
template (``*.cu.tmpl``) becomes, at configure time, code specialised for the GPU and the problem
shapes of the project: ``kt generate`` looks each shape up in the tuning caches, tunes on a miss
when a GPU is present, and writes the variants, a launcher and a header into the build tree.

Getting it::

  find_package(kt REQUIRED)          # an installed kt (ktConfig.cmake includes this module)
  # or
  add_subdirectory(path/to/kt kt-build EXCLUDE_FROM_ALL)

Either way the calling project must enable CUDA (``project(... LANGUAGES CXX CUDA)``).

.. command:: kt_add_tuned_kernel

  ::

    kt_add_tuned_kernel(<target>
      NAME <name>
      TEMPLATE <file>
      SHAPES <shape>...
      [TYPES <symbol>=<type>...]
      [ARCH <arch>]
      [FLAGS <flag>...]
      [OUTPUT_DIR <dir>]
      [CACHE_DIR <dir>]
      [PROJECT_CACHE <dir>])

  Generates the tuned kernel ``<name>`` from ``<file>`` and adds it to ``<target>``, an
  executable or a library created before the call.  The target's code includes
  ``kt_<name>.h`` and calls ``kt_<name>(<kernel arguments>..., cudaStream_t)``, which launches
  the variant tuned for the runtime shape.

  ``<target>``
    Receives the generated sources (PRIVATE) and the output directory as a PUBLIC include
    directory (build interface only), so that the target and its users can include the header.

  ``NAME <name>``
    A C identifier: the launcher is ``kt_<name>`` and the files are ``kt_<name>.*``.  Each name
    may be used once per build.

  ``TEMPLATE <file>``
    The annotated template; a relative path is taken from ``CMAKE_CURRENT_SOURCE_DIR``.  The
    templates that ship with kt are in ``${KT_TEMPLATES_DIR}``.  The template and the local
    headers it includes become configure dependencies: editing them re-runs the generation.

  ``SHAPES <shape>...``
    One or more shapes to tune for, each one list item that gives every shape symbol of the
    template, e.g. ``"rows=4096,hidden=4096"``.

  ``TYPES <symbol>=<type>...``
    Choices for the template's type symbols, e.g. ``T=bfloat16``, and for its options (named
    choices that the caller fixes, ``@kt option``), e.g. ``LSE=base2``; the template's defaults
    otherwise.

  ``ARCH <arch>``
    The compute capability to tune for, e.g. ``90``, or ``90a`` for Hopper's
    architecture-specific instructions (``wgmma``; a template's constraints see the target as
    ``sm`` and ``sm_a``).  Default: the first entry of ``CMAKE_CUDA_ARCHITECTURES`` (without
    ``-real``/``-virtual``), else ``90``.  The target the generated sources are compiled for must
    match: ``90a`` variants need ``CMAKE_CUDA_ARCHITECTURES`` ``90a``.

  ``FLAGS <flag>...``
    Extra nvcc flags for the kernel.  They are used when tuning (with ``CMAKE_CUDA_FLAGS``, and
    the compiler ``CMAKE_CUDA_COMPILER``) and when the generated sources are compiled, so that
    what is measured is what ships.  They are part of the cache key.

  ``OUTPUT_DIR <dir>``
    Where the generated files go.  Default: ``${CMAKE_CURRENT_BINARY_DIR}/kt/<name>``.

  ``CACHE_DIR <dir>``
    The user's tuning cache.  Default: ``KT_CACHE_DIR`` if set, else kt's own default.

  ``PROJECT_CACHE <dir>``
    The tuning cache committed with the project (read first after the user's cache; CI reuses
    it).  Default: ``${PROJECT_SOURCE_DIR}/cache`` when that directory exists.

Options
^^^^^^^

Cache variables; an environment variable of the same name, when set, overrides the cache value
for that configure run (``KT_RETUNE=ON cmake -S . -B build``).

``KT_RETUNE``
  ``OFF`` (default), ``ON`` (ignore cache hits and tune every kernel again) or a name pattern
  (re-tune the kernels whose NAME matches it).  It stays in the cache: set it back to ``OFF``.
``KT_REQUIRE_CACHE_HIT``
  A cache miss is a configure error that names each missing key (for CI).  Default ``OFF``.
``KT_GPU``
  The GPU to generate for when none is present, e.g. ``NVIDIA H200``: its cached
  configurations are used.
``KT_CACHE_DIR``
  The user's tuning cache directory (``CACHE_DIR`` overrides it per kernel).
``KT_REMOTE_CACHE``
  URL of a remote HTTP cache (bazel-remote, nginx WebDAV).  A remote that fails never fails the
  build.
``KT_READ_ONLY``
  Never write to any cache.  Default ``ON`` when the environment variable ``CI`` is set.
``KT_TUNE``
  ``ON`` (default): tune on a cache miss when a GPU is present.  ``OFF``: never tune; use the
  cached configurations, else the template's defaults (quick builds, tests).
``KT_TUNE_BUDGET``
  Evaluations per shape when a miss is tuned.  Empty (default): kt's default, 400; a negative
  value tunes the whole space.
``KT_TUNE_SECONDS``
  Wall seconds per shape when a miss is tuned.  Empty (default): kt's default, 90; a negative
  value sets no limit.
``KT_AGENT``
  The planner between tuning rounds, handed to kt in its environment: ``builtin`` (default, the
  deterministic planner), ``llm`` (an OpenAI-compatible agent, see kt's README) or ``off``.
``KT_EXECUTABLE``
  The ``kt`` tool to run.  Default: the one of ``find_package(kt)``, else, when kt is used
  through ``add_subdirectory()``, one built from its sources at configure time, once, in
  ``${CMAKE_BINARY_DIR}/kt-tool``.

Variables
^^^^^^^^^

``KT_TEMPLATES_DIR``
  The directory of the templates that ship with kt.
#]=======================================================================]

include_guard(GLOBAL)
if(CMAKE_VERSION VERSION_LESS 3.25)
  message(FATAL_ERROR "kt needs CMake 3.25 or newer (this is ${CMAKE_VERSION})")
endif()

# kt's source tree when this module is in one ("" when installed: the package has the tool).
# A function, not a variable: the module may be included in another directory (add_subdirectory)
# than the ones that call kt_add_tuned_kernel.
function(_kt_source_dir out)
  get_filename_component(dir "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/.." ABSOLUTE)
  if(NOT EXISTS "${dir}/generator/main.c")
    set(dir "")
  endif()
  set(${out} "${dir}" PARENT_SCOPE)
endfunction()

_kt_source_dir(_kt_source)
if(NOT DEFINED KT_TEMPLATES_DIR AND _kt_source)
  set(KT_TEMPLATES_DIR "${_kt_source}/templates")
endif()
unset(_kt_source)

# ---- options ----------------------------------------------------------------------------------

if(DEFINED ENV{CI})
  set(_kt_read_only_default ON)
else()
  set(_kt_read_only_default OFF)
endif()
set(KT_RETUNE OFF CACHE STRING "kt: re-tune all kernels (ON), none (OFF) or those whose name matches a pattern")
option(KT_REQUIRE_CACHE_HIT "kt: a tuning-cache miss is a configure error" OFF)
set(KT_GPU "" CACHE STRING "kt: GPU to generate for when none is present (e.g. \"NVIDIA H200\")")
set(KT_CACHE_DIR "" CACHE PATH "kt: the user's tuning cache directory (empty: kt's default)")
set(KT_REMOTE_CACHE "" CACHE STRING "kt: URL of a remote HTTP tuning cache")
option(KT_READ_ONLY "kt: never write to the tuning caches" ${_kt_read_only_default})
option(KT_TUNE "kt: tune on a cache miss when a GPU is present (OFF: cached or default configurations)" ON)
set(KT_TUNE_BUDGET "" CACHE STRING "kt: evaluations per shape when tuning a miss (empty: kt's default, 400)")
set(KT_TUNE_SECONDS "" CACHE STRING "kt: seconds per shape when tuning a miss (empty: kt's default, 90)")
set(KT_AGENT builtin CACHE STRING "kt: tuning planner: off, builtin or llm")
set_property(CACHE KT_AGENT PROPERTY STRINGS off builtin llm)
set(KT_EXECUTABLE "" CACHE FILEPATH "kt: the kt tool (empty: from find_package(kt) or built from source)")
unset(_kt_read_only_default)

# The value of option <name>: the environment's when set there, else the cache's.
function(_kt_option out name)
  if(DEFINED ENV{${name}})
    set(${out} "$ENV{${name}}" PARENT_SCOPE)
  else()
    set(${out} "${${name}}" PARENT_SCOPE)
  endif()
endfunction()

# ---- the kt tool --------------------------------------------------------------------------

# Builds the kt tool from its sources into ${CMAKE_BINARY_DIR}/kt-tool with a nested CMake,
# unless it is there and newer than every source of it.  Used when kt came in through
# add_subdirectory(): the tool must run at configure time, before the outer build exists.
function(_kt_build_tool out source)
  set(bindir "${CMAKE_BINARY_DIR}/kt-tool")
  set(exe "${bindir}/generator/kt${CMAKE_EXECUTABLE_SUFFIX}")
  set(stamp "${bindir}/kt-tool.stamp") # touched after each successful build
  file(GLOB sources "${source}/generator/*.[ch]" "${source}/cmake/Find*.cmake")
  list(APPEND sources "${source}/CMakeLists.txt" "${source}/generator/CMakeLists.txt")
  set(stale FALSE)
  if(NOT EXISTS "${exe}" OR NOT EXISTS "${stamp}")
    set(stale TRUE)
  else()
    foreach(src IN LISTS sources)
      if("${src}" IS_NEWER_THAN "${stamp}")
        set(stale TRUE)
        break()
      endif()
    endforeach()
  endif()
  # Editing kt itself re-runs the configure, which rebuilds the tool and regenerates.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${sources})
  if(stale)
    message(STATUS "kt: building the kt tool in ${bindir}")
    if(NOT EXISTS "${bindir}/CMakeCache.txt")
      # CMAKE_PREFIX_PATH (where cJSON, xxHash, curl may be) goes through the environment, where
      # a list is written with ':' and survives the command line.
      set(prefix ${CMAKE_PREFIX_PATH})
      if(DEFINED ENV{CMAKE_PREFIX_PATH})
        string(REPLACE ":" ";" env_prefix "$ENV{CMAKE_PREFIX_PATH}")
        list(APPEND prefix ${env_prefix})
      endif()
      list(JOIN prefix ":" prefix)
      set(args -E env "CMAKE_PREFIX_PATH=${prefix}"
        "${CMAKE_COMMAND}" -S "${source}" -B "${bindir}" -G Ninja
        -DCMAKE_BUILD_TYPE=Release -DKT_BUILD_TESTS=OFF -DKT_INSTALL=OFF)
      if(CMAKE_C_COMPILER)
        list(APPEND args "-DCMAKE_C_COMPILER=${CMAKE_C_COMPILER}")
      endif()
      if(CMAKE_GENERATOR MATCHES "Ninja" AND CMAKE_MAKE_PROGRAM)
        list(APPEND args "-DCMAKE_MAKE_PROGRAM=${CMAKE_MAKE_PROGRAM}")
      endif()
      _kt_run_step("configuring the kt tool" "${CMAKE_COMMAND}" ${args})
    endif()
    _kt_run_step("building the kt tool" "${CMAKE_COMMAND}" --build "${bindir}" --target kt)
    file(TOUCH "${stamp}")
  endif()
  set(${out} "${exe}" PARENT_SCOPE)
endfunction()

# Runs a command of the tool's build; on failure shows its output and stops.
function(_kt_run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(NOT rc EQUAL 0)
    message(NOTICE "${output}")
    message(FATAL_ERROR "kt: ${what} failed (${rc}); see the output above")
  endif()
endfunction()

# Sets <out> to the kt executable: KT_EXECUTABLE, the imported kt::kt, or one built from source.
# The answer is kept for the rest of the configure run.
function(_kt_find_tool out)
  get_property(exe GLOBAL PROPERTY _KT_TOOL)
  get_property(package_tool GLOBAL PROPERTY _KT_PACKAGE_TOOL)
  _kt_source_dir(source)
  if(NOT exe)
    if(KT_EXECUTABLE)
      set(exe "${KT_EXECUTABLE}")
    elseif(TARGET kt::kt)
      get_target_property(exe kt::kt LOCATION)
    elseif(package_tool)
      set(exe "${package_tool}") # find_package(kt) in a directory that does not see kt::kt
    elseif(source)
      _kt_build_tool(exe "${source}")
    else()
      message(FATAL_ERROR "kt: no kt tool: set KT_EXECUTABLE, use find_package(kt) or add_subdirectory() kt's sources")
    endif()
    if(NOT EXISTS "${exe}")
      message(FATAL_ERROR "kt: the kt tool '${exe}' does not exist (KT_EXECUTABLE?)")
    endif()
    set_property(GLOBAL PROPERTY _KT_TOOL "${exe}")
  endif()
  set(${out} "${exe}" PARENT_SCOPE)
endfunction()

# ---- kt_add_tuned_kernel ------------------------------------------------------------------

# The compute capability to tune for: ARCH, else the first of CMAKE_CUDA_ARCHITECTURES, else 90.
function(_kt_arch out arch)
  if(NOT arch)
    list(GET CMAKE_CUDA_ARCHITECTURES 0 arch)
    string(REGEX REPLACE "-(real|virtual)$" "" arch "${arch}")
    if(NOT arch MATCHES "^[0-9]+[af]?$") # native, all, all-major, OFF or unset
      set(arch 90)
    endif()
  endif()
  set(${out} "${arch}" PARENT_SCOPE)
endfunction()

# Checks the arguments of kt_add_tuned_kernel (in the caller's arg_* variables).
macro(_kt_check_args)
  if(arg_UNPARSED_ARGUMENTS)
    list(JOIN arg_UNPARSED_ARGUMENTS " " _kt_bad)
    message(FATAL_ERROR "kt_add_tuned_kernel(${target}): unknown argument(s): ${_kt_bad}")
  endif()
  foreach(_kt_kw IN LISTS arg_KEYWORDS_MISSING_VALUES)
    message(FATAL_ERROR "kt_add_tuned_kernel(${target}): ${_kt_kw} needs a value")
  endforeach()
  foreach(_kt_kw NAME TEMPLATE SHAPES)
    if(NOT DEFINED arg_${_kt_kw})
      message(FATAL_ERROR "kt_add_tuned_kernel(${target}): ${_kt_kw} is required")
    endif()
  endforeach()
  if(NOT arg_NAME MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "kt_add_tuned_kernel(${target}): NAME '${arg_NAME}' is not a C identifier")
  endif()
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "kt_add_tuned_kernel(${target}): '${target}' is not a target; create it first (add_executable or add_library)")
  endif()
  get_target_property(_kt_type "${target}" TYPE)
  get_target_property(_kt_imported "${target}" IMPORTED)
  get_target_property(_kt_alias "${target}" ALIASED_TARGET)
  if(_kt_imported OR _kt_alias OR _kt_type STREQUAL "INTERFACE_LIBRARY" OR _kt_type STREQUAL "UTILITY")
    message(FATAL_ERROR "kt_add_tuned_kernel(${target}): '${target}' cannot take sources; give an executable or a library built here")
  endif()
  if(DEFINED arg_ARCH AND NOT arg_ARCH MATCHES "^[0-9][0-9][0-9]?[af]?$")
    message(FATAL_ERROR "kt_add_tuned_kernel(${target}): ARCH '${arg_ARCH}' is not a compute capability (expected e.g. 90, or 90a for the architecture-specific target)")
  endif()
  if(NOT EXISTS "${arg_TEMPLATE}" OR IS_DIRECTORY "${arg_TEMPLATE}")
    message(FATAL_ERROR "kt_add_tuned_kernel(${target}): TEMPLATE '${arg_TEMPLATE}' does not exist")
  endif()
  if(NOT CMAKE_CUDA_COMPILER)
    message(FATAL_ERROR "kt_add_tuned_kernel(${target}): CUDA is not enabled; add it to project(... LANGUAGES ... CUDA)")
  endif()
  get_property(_kt_owner GLOBAL PROPERTY "_KT_NAME_${arg_NAME}")
  if(_kt_owner)
    message(FATAL_ERROR "kt_add_tuned_kernel(${target}): NAME '${arg_NAME}' is already used by ${_kt_owner}")
  endif()
endmacro()

# Sets <out> to the arguments of kt generate that come from the KT_* options.
function(_kt_option_args out)
  set(args "")
  _kt_option(retune KT_RETUNE)
  if(retune MATCHES "^(ON|On|on|TRUE|True|true|YES|Yes|yes|Y|y|1)$")
    list(APPEND args --retune)
  elseif(retune AND NOT retune MATCHES "^(OFF|Off|off|FALSE|False|false|NO|No|no|N|n|0|IGNORE)$")
    list(APPEND args "--retune=${retune}")
  endif()
  foreach(pair "KT_REQUIRE_CACHE_HIT;--require-hit" "KT_READ_ONLY;--read-only")
    list(GET pair 0 var)
    list(GET pair 1 flag)
    _kt_option(value ${var})
    if(value)
      list(APPEND args ${flag})
    endif()
  endforeach()
  foreach(pair "KT_GPU;--gpu" "KT_REMOTE_CACHE;--remote" "KT_TUNE_BUDGET;--budget" "KT_TUNE_SECONDS;--seconds")
    list(GET pair 0 var)
    list(GET pair 1 flag)
    _kt_option(value ${var})
    if(NOT value STREQUAL "")
      list(APPEND args ${flag} "${value}")
    endif()
  endforeach()
  _kt_option(tune KT_TUNE)
  if(NOT tune)
    list(APPEND args --no-tune)
  endif()
  set(${out} "${args}" PARENT_SCOPE)
endfunction()

function(kt_add_tuned_kernel target)
  cmake_parse_arguments(PARSE_ARGV 1 arg ""
    "NAME;TEMPLATE;ARCH;OUTPUT_DIR;CACHE_DIR;PROJECT_CACHE" "SHAPES;TYPES;FLAGS")
  if(DEFINED arg_TEMPLATE)
    get_filename_component(arg_TEMPLATE "${arg_TEMPLATE}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  endif()
  _kt_check_args()
  set(name "${arg_NAME}")
  set(out "${CMAKE_CURRENT_BINARY_DIR}/kt/${name}")
  if(arg_OUTPUT_DIR)
    get_filename_component(out "${arg_OUTPUT_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  endif()

  _kt_find_tool(kt)
  _kt_arch(arch "${arg_ARCH}")
  set(flags "${CMAKE_CUDA_FLAGS}" ${arg_FLAGS})
  list(JOIN flags " " flags)
  string(STRIP "${flags}" flags)
  set(cmd "${kt}" generate --template "${arg_TEMPLATE}" --name "${name}" --out "${out}"
    --arch "${arch}" --nvcc "${CMAKE_CUDA_COMPILER}")
  if(flags) # (an empty argument would vanish from the command line)
    list(APPEND cmd "--flags=${flags}")
  endif()
  foreach(shape IN LISTS arg_SHAPES)
    list(APPEND cmd --shape "${shape}")
  endforeach()
  foreach(type IN LISTS arg_TYPES)
    list(APPEND cmd --type "${type}")
  endforeach()
  set(cache_dir "${arg_CACHE_DIR}")
  if(NOT cache_dir)
    _kt_option(cache_dir KT_CACHE_DIR)
  endif()
  if(cache_dir)
    list(APPEND cmd --cache-dir "${cache_dir}")
  endif()
  set(project_cache "${arg_PROJECT_CACHE}")
  if(NOT project_cache AND IS_DIRECTORY "${PROJECT_SOURCE_DIR}/cache")
    set(project_cache "${PROJECT_SOURCE_DIR}/cache")
  endif()
  if(project_cache)
    get_filename_component(project_cache "${project_cache}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND cmd --project-cache "${project_cache}")
  endif()
  _kt_option_args(options)
  list(APPEND cmd ${options})
  # The planner is chosen through kt's environment (KT_AGENT, read by kt's agent module).
  _kt_option(agent KT_AGENT)
  if(NOT agent MATCHES "^(off|builtin|llm)$")
    message(FATAL_ERROR "kt_add_tuned_kernel(${name}): KT_AGENT is '${agent}'; expected off, builtin or llm")
  endif()
  list(PREPEND cmd "${CMAKE_COMMAND}" -E env "KT_AGENT=${agent}")

  # kt's output goes to the console as it comes (tuning takes a while): its notes, and on
  # failure its diagnostics, verbatim (file:line:col, the line, a caret).
  message(STATUS "kt: generating ${name} from ${arg_TEMPLATE}")
  execute_process(COMMAND ${cmd} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    if(NOT rc MATCHES "^[0-9]+$")
      message(NOTICE "kt: cannot run ${kt}: ${rc}")
    endif()
    message(FATAL_ERROR "kt_add_tuned_kernel(${name}): kt generate failed")
  endif()
  set(listing "${out}/kt_${name}.cmake")
  if(NOT EXISTS "${listing}")
    message(FATAL_ERROR "kt_add_tuned_kernel(${name}): kt generate did not write ${listing}")
  endif()

  set(KT_GENERATED_SOURCES "")
  set(KT_GENERATED_DEPENDS "")
  include("${listing}")
  target_sources(${target} PRIVATE ${KT_GENERATED_SOURCES})
  if(arg_FLAGS)
    set_source_files_properties(${KT_GENERATED_SOURCES} TARGET_DIRECTORY ${target}
      PROPERTIES COMPILE_OPTIONS "${arg_FLAGS}")
  endif()
  # The header includes the CUDA runtime's headers, also when included from C or C++ sources.
  target_include_directories(${target} PUBLIC "$<BUILD_INTERFACE:${out}>")
  foreach(dir IN LISTS CMAKE_CUDA_TOOLKIT_INCLUDE_DIRECTORIES)
    target_include_directories(${target} SYSTEM PUBLIC "$<BUILD_INTERFACE:${dir}>")
  endforeach()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
    "${arg_TEMPLATE}" ${KT_GENERATED_DEPENDS} "${kt}")
  set_property(GLOBAL PROPERTY "_KT_NAME_${name}" "kt_add_tuned_kernel(${target}) in ${CMAKE_CURRENT_SOURCE_DIR}")
endfunction()
