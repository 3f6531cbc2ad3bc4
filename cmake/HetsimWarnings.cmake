# Warning flags for every hetsim target: hetsim_warnings(<target>).
function(hetsim_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                         -Wno-sign-conversion)
  # GCC 12 reports false -Wrestrict / -Wmaybe-uninitialized positives inside libstdc++'s
  # std::string at -O3 (GCC bugs 105329, 105651); the sanitizer build covers what they would.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-restrict -Wno-maybe-uninitialized)
  endif()
  # A unity build (the ci and asan presets) compiles several .cpp files as one, so GCC takes a
  # class of one file whose member has a type from that file's anonymous namespace for one
  # declared in a header. Each file is still its own translation unit in a normal build.
  if(CMAKE_UNITY_BUILD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
  endif()
  if(HETSIM_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  target_compile_features(${target} PUBLIC cxx_std_20)
endfunction()
