# ctest core.install_example: installs NeoMeg to a temporary prefix, builds examples/cpp against
# the installed package (find_package(NeoMeg)), and runs it and the installed load_and_run on a
# model written by write_example_model.
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DWRITER=... -P install_example_test.cmake
function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

function(expect_in text needle)
  string(FIND "${text}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "expected '${needle}' in:\n${text}")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run_step("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
run_step("writing the model" ${WRITER} ${WORK_DIR}/model.nmeg)
run_step("configuring the example" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/cpp
         -B ${WORK_DIR}/build -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run_step("building the example" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)

run_step("the example" ${WORK_DIR}/build/classify ${WORK_DIR}/model.nmeg 1 2 3 4 4 3 2 1)
message(STATUS "${step_output}")
expect_in("${step_output}" "user_info 'example classifier'")
expect_in("${step_output}" "input data: float32 [ -1 4 ]")
expect_in("${step_output}" "output prob: float32 [ 2 3 ]")
expect_in("${step_output}" "row 0: class 2")
expect_in("${step_output}" "row 1: class 0")

run_step("the installed load_and_run" ${prefix}/bin/load_and_run ${WORK_DIR}/model.nmeg
         --input-shape data=5,4 --iters 2)
expect_in("${step_output}" "output prob: (5, 3) float32")
file(REMOVE_RECURSE ${WORK_DIR})
