# Runs nnc-plan on the fixtures in DATA and checks output and exit status.
# Usage: cmake -DNNC_PLAN=... -DDATA=... -P nnc_plan_cli.cmake
function(run_plan file)
  execute_process(COMMAND ${NNC_PLAN} ${DATA}/${file} ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(rc "${rc}" PARENT_SCOPE)
  set(out "${out}" PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
endfunction()

function(expect_contains haystack needle what)
  string(FIND "${haystack}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: expected to find '${needle}' in:\n${haystack}")
  endif()
endfunction()

run_plan(good.txt)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "good.txt: exit ${rc}\n${out}${err}")
endif()
expect_contains("${out}" "tensors 8, no reuse 1550 bytes" "good.txt")
expect_contains("${out}" "nnc    arena 800 bytes, lower bound 800 bytes, ratio 1.000x, check ok" "good.txt")
expect_contains("${out}" "greedy arena 800 bytes, lower bound 800 bytes, ratio 1.000x, check ok" "good.txt")
expect_contains("${out}" "best   arena 800 bytes, lower bound 800 bytes, ratio 1.000x, check ok" "good.txt")

run_plan(good.txt --offsets)
expect_contains("${out}" "# id bytes first_step last_step nnc greedy best" "--offsets")
expect_contains("${out}" "\n23 400 8 8 " "--offsets")

run_plan(good.txt --align 256)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "--align 256: exit ${rc}\n${out}${err}")
endif()
expect_contains("${out}" "check ok" "--align 256")

foreach(case IN ITEMS "bad_fields.txt;line 3: expected 4 integers"
                      "bad_negative.txt;line 3: negative size"
                      "bad_order.txt;line 4: last_step 3 is before first_step 9"
                      "bad_duplicate.txt;line 3: duplicate id 1 (first on line 1)"
                      "bad_text.txt;line 2: \"x\" is not an integer")
  list(GET case 0 file)
  list(GET case 1 want)
  run_plan(${file})
  if(NOT rc EQUAL 2)
    message(FATAL_ERROR "${file}: expected exit 2, got ${rc}\n${out}${err}")
  endif()
  expect_contains("${err}" "${want}" "${file}")
endforeach()

run_plan(does-not-exist.txt)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "missing file: expected exit 2, got ${rc}")
endif()
