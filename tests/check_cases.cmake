# cmake -DMANIFEST=FILE -P check_cases.cmake
#
# FILE (written by tests/CMakeLists.txt) has a line per test program:
# "name1,name2,...|/path/to/program" (a shell test: "...|sh|/path/to/x.sh"),
# the CTest tests registered for its cases. Each program's --list must
# print exactly those names, in that order: a case that CMake did not register (or a registered name that is
# no case) would otherwise go unnoticed.
cmake_minimum_required(VERSION 3.16)
if(NOT MANIFEST)
  message(FATAL_ERROR "usage: cmake -DMANIFEST=FILE -P check_cases.cmake")
endif()
file(STRINGS "${MANIFEST}" entries)
set(failed 0)
set(programs 0)
set(cases 0)
foreach(entry IN LISTS entries)
  string(FIND "${entry}" "|" bar)
  string(SUBSTRING "${entry}" 0 ${bar} csv)
  math(EXPR from "${bar} + 1")
  string(SUBSTRING "${entry}" ${from} -1 cmd)
  string(REPLACE "|" ";" cmd "${cmd}")
  list(GET cmd -1 exe)
  string(REPLACE "," ";" registered "${csv}")
  execute_process(COMMAND ${cmd} --list RESULT_VARIABLE rc OUTPUT_VARIABLE out
    ERROR_VARIABLE err)
  if(NOT rc STREQUAL "0")
    message(SEND_ERROR "${exe} --list: exit ${rc}: ${err}")
    set(failed 1)
    continue()
  endif()
  string(REGEX REPLACE "\n$" "" out "${out}")
  string(REPLACE "\n" ";" listed "${out}")
  if(NOT listed STREQUAL registered)
    set(missing "")
    foreach(n IN LISTS listed)
      if(NOT n IN_LIST registered)
        list(APPEND missing ${n})
      endif()
    endforeach()
    set(extra "")
    foreach(n IN LISTS registered)
      if(NOT n IN_LIST listed)
        list(APPEND extra ${n})
      endif()
    endforeach()
    message(SEND_ERROR "${exe}: its cases and the CTest tests registered for it differ\n"
      "  cases not registered: ${missing}\n"
      "  registered but no such case: ${extra}\n"
      "  (or the same names in another order)\n"
      "  --list:     ${listed}\n  registered: ${registered}")
    set(failed 1)
  endif()
  math(EXPR programs "${programs} + 1")
  list(LENGTH listed n)
  math(EXPR cases "${cases} + ${n}")
endforeach()
if(failed)
  message(FATAL_ERROR "some cases are not registered as CTest tests (see above)")
endif()
message(STATUS "${cases} cases of ${programs} programs, each registered as a CTest test")
