# polycoal's CMake package:
#   find_package(polycoal CONFIG REQUIRED PATHS "<output of: polycoal --cmake-dir>")
#   polycoal_transform_sources(<target>)
#
# For every .cu source of <target>, a build step runs `polycoal prepare` (the launcher's
# work on one file: transformed kernels, the original where polycoal cannot, #line
# directives to the original, the build cache) into <build dir>/polycoal.dir/<target>/, and
# the target compiles that file instead. Without this package, the launcher does the same
# for every CUDA source of a build: -DCMAKE_CUDA_COMPILER_LAUNCHER="polycoal;launch".
#
# POLYCOAL_COMMAND: how to run polycoal, a list (default: the polycoal executable found
# on PATH), e.g. -DPOLYCOAL_COMMAND="/path/to/python;-m;polycoal".

if(CMAKE_VERSION VERSION_LESS 3.20)
  set(polycoal_FOUND FALSE)
  set(polycoal_NOT_FOUND_MESSAGE "polycoal needs CMake 3.20 or newer (DEPFILE with Make)")
  return()
endif()

if(NOT POLYCOAL_COMMAND)
  find_program(POLYCOAL_EXECUTABLE polycoal)
  if(NOT POLYCOAL_EXECUTABLE)
    set(polycoal_FOUND FALSE)
    set(polycoal_NOT_FOUND_MESSAGE "no polycoal executable on PATH: set POLYCOAL_COMMAND")
    return()
  endif()
  set(POLYCOAL_COMMAND "${POLYCOAL_EXECUTABLE}" CACHE STRING "how to run polycoal (a list)")
endif()

function(polycoal_transform_sources target)
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  # the target's own include directories, definitions and standard, at build time
  set(includes "$<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>")
  set(defines "$<TARGET_PROPERTY:${target},COMPILE_DEFINITIONS>")
  set(std "$<TARGET_PROPERTY:${target},CUDA_STANDARD>")
  # its compile options: polycoal prepare reads the forced includes among them
  # (-include, --pre-include, -imacros; `SHELL:-include a.h` too) as the compiler does
  set(options "$<TARGET_PROPERTY:${target},COMPILE_OPTIONS>")
  set(kept "")
  foreach(source IN LISTS sources)
    if(NOT source MATCHES "\\.cu$" OR source MATCHES "^\\$<")
      list(APPEND kept "${source}")        # not CUDA, or a generator expression
      continue()
    endif()
    get_filename_component(path "${source}" ABSOLUTE BASE_DIR "${source_dir}")
    get_filename_component(name "${path}" NAME)
    get_filename_component(dir "${path}" DIRECTORY)
    string(MD5 tag "${path}")
    string(SUBSTRING "${tag}" 0 12 tag)    # one directory per source: names may repeat
    set(out "${CMAKE_CURRENT_BINARY_DIR}/polycoal.dir/${target}/${tag}/${name}")
    add_custom_command(
      OUTPUT "${out}"
      COMMAND ${POLYCOAL_COMMAND} prepare "${path}" -o "${out}" --depfile "${out}.d"
              "$<$<BOOL:${includes}>:-I$<JOIN:${includes},;-I>>"
              "$<$<BOOL:${defines}>:-D$<JOIN:${defines},;-D>>"
              "$<$<BOOL:${std}>:--std=c++${std}>"
              "$<$<BOOL:${options}>:--compile-option=$<JOIN:${options},;--compile-option=>>"
      DEPENDS "${path}"
      DEPFILE "${out}.d"
      COMMENT "polycoal: ${name} (${target})"
      COMMAND_EXPAND_LISTS VERBATIM)
    # includes relative to the original keep resolving from the copy
    set_source_files_properties("${out}" PROPERTIES INCLUDE_DIRECTORIES "${dir}")
    list(APPEND kept "${out}")
  endforeach()
  set_property(TARGET ${target} PROPERTY SOURCES "${kept}")
endfunction()
