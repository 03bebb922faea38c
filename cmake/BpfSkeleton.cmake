# add_bpf_skeleton(<name> <source.bpf.c>)
#
# Compiles a BPF program with clang -target bpf and generates its libbpf skeleton with
# `bpftool gen skeleton`. Defines the INTERFACE target `<name>_skel`; linking it puts
# `<name>.skel.h` on the include path and links libbpf. C++ includes the shared structs as
# "bpf/<name>.h" (bpf/ itself is not on the path: bpf/sched.h would shadow <sched.h>). Headers the source includes are
# tracked through a clang depfile, so editing a shared bpf/*.h rebuilds the skeleton.

find_program(BPF_CLANG NAMES clang clang-14 REQUIRED)
find_program(BPFTOOL NAMES bpftool PATHS /usr/sbin /usr/local/sbin REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBBPF REQUIRED IMPORTED_TARGET libbpf)

if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  set(BPF_TARGET_ARCH x86)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
  set(BPF_TARGET_ARCH arm64)
else()
  message(FATAL_ERROR "stagewatch: no vmlinux.h for ${CMAKE_SYSTEM_PROCESSOR}; run vmlinux/gen-vmlinux.sh")
endif()
set(BPF_VMLINUX_DIR ${PROJECT_SOURCE_DIR}/vmlinux/${BPF_TARGET_ARCH})

function(add_bpf_skeleton name source)
  get_filename_component(src_abs ${source} ABSOLUTE)
  set(out_dir ${CMAKE_BINARY_DIR}/bpf)
  set(obj ${out_dir}/${name}.bpf.o)
  set(skel ${out_dir}/${name}.skel.h)
  set(dep ${out_dir}/${name}.bpf.d)

  add_custom_command(
    OUTPUT ${obj}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}
    COMMAND ${BPF_CLANG} -g -O2 -target bpf -D__TARGET_ARCH_${BPF_TARGET_ARCH}
            -Wall -Werror -Wno-unused-function
            -I${BPF_VMLINUX_DIR} -I${PROJECT_SOURCE_DIR}/bpf
            -MD -MF ${dep}
            -c ${src_abs} -o ${obj}
    DEPFILE ${dep}
    DEPENDS ${src_abs}
    COMMENT "BPF ${name}.bpf.c"
    VERBATIM)

  add_custom_command(
    OUTPUT ${skel}
    COMMAND ${BPFTOOL} gen skeleton ${obj} name ${name}_bpf > ${skel}
    DEPENDS ${obj}
    COMMENT "skeleton ${name}.skel.h"
    VERBATIM)

  add_custom_target(${name}_skel_gen DEPENDS ${skel})
  add_library(${name}_skel INTERFACE)
  add_dependencies(${name}_skel ${name}_skel_gen)
  target_include_directories(${name}_skel INTERFACE ${out_dir})
  target_link_libraries(${name}_skel INTERFACE PkgConfig::LIBBPF)
endfunction()
