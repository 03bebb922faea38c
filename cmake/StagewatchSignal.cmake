# stagewatch_signal(<name> [BPF <file.bpf.c>...] [CORE <source>...] [COLLECTOR <source>]
#                   REGISTRATION <source>)
#
# A signal's whole build, called from its own agent/signals/<name>/CMakeLists.txt (the top
# CMakeLists.txt adds every such directory): its BPF programs (bpf/<file>, turned into
# skeletons linked into the core), its probe loader and tracker (the core library), its
# collector (exporters/metrics/<source>, the exporters library) and the file that registers it
# (the stagewatch_signals object library, linked whole into every program that starts signals,
# so that no linker drops a registration nothing else refers to).
function(stagewatch_signal name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "COLLECTOR;REGISTRATION" "BPF;CORE")
  if(NOT arg_REGISTRATION)
    message(FATAL_ERROR "stagewatch_signal(${name}): REGISTRATION is required")
  endif()
  foreach(program ${arg_BPF})
    string(REGEX REPLACE "\\.bpf\\.c$" "" skeleton ${program})
    add_bpf_skeleton(${skeleton} ${PROJECT_SOURCE_DIR}/bpf/${program})
    target_link_libraries(stagewatch_core PUBLIC ${skeleton}_skel)
  endforeach()
  if(arg_CORE)
    target_sources(stagewatch_core PRIVATE ${arg_CORE})
  endif()
  if(arg_COLLECTOR)
    target_sources(stagewatch_exporters PRIVATE ${PROJECT_SOURCE_DIR}/exporters/metrics/${arg_COLLECTOR})
  endif()
  target_sources(stagewatch_signals PRIVATE ${arg_REGISTRATION})
endfunction()
