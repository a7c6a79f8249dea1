# gemm_sm90's constraints, without a GPU: each illegal combination is rejected, and legal
# neighbours of it are not.  -DKT=kt -DTEMPLATE=file
function(run out)
  execute_process(COMMAND ${KT} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
  set(${out} "${rc}\n${o}${e}" PARENT_SCOPE)
endfunction()
function(expect text regex why)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${why}: expected /${regex}/ in:\n${text}")
  endif()
endfunction()
function(reject text regex why)
  if(text MATCHES "${regex}")
    message(FATAL_ERROR "${why}: /${regex}/ should not appear in:\n${text}")
  endif()
endfunction()

# wgmma, setmaxnreg and the tensor-map instructions exist only on the sm_90a target
run(o check ${TEMPLATE} --arch 90 --shape M=4096,N=4096,K=4096)
expect("${o}" "^1\n.*no configuration satisfies the constraints" "sm_90 without a")
# the copy engine's strides are multiples of 16 bytes: N and K multiples of 8
run(o check ${TEMPLATE} --arch 90a --shape M=16,N=4100,K=4096)
expect("${o}" "^1\n.*no configuration satisfies" "N % 8")
run(o check ${TEMPLATE} --arch 90a --shape M=16,N=4096,K=4100)
expect("${o}" "^1\n.*no configuration satisfies" "K % 8")
run(o check ${TEMPLATE} --arch 90a --shape M=17,N=4104,K=1000)
expect("${o}" "^0\n.*default .* is feasible" "odd M, N and K that the copy engine can stride")

# K = 200 is 4 slices of 64: at most 2 blocks per cluster, each with 2 slices or more
run(s space ${TEMPLATE} --arch 90a --shape M=16,N=4096,K=200)
expect("${s}" "\n64 +64 +64 +2 +2 +1" "split in 2 at K = 200")
reject("${s}" "\n[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[48] +" "split in 4 or 8 at K = 200")
# at most two consumer warpgroups (setmaxnreg), and 128 x 256 accumulators are too many for one
reject("${s}" "\n256 +[0-9]+ +64 +" "four consumers of 64 rows")
reject("${s}" "\n[0-9]+ +256 +128 +" "128 x 256 accumulators in one consumer")
expect("${s}" "\n128 +128 +128 +" "128 x 128 in one consumer")
expect("${s}" "\n256 +128 +128 +" "256 rows for two consumers")
expect("${s}" "\n64 +256 +64 +" "64 x 256 in one consumer")
# the stages fit in shared memory: 256 x 256 tiles do not, whatever the stages
reject("${s}" "\n256 +256 +" "256 x 256 stages")
reject("${s}" "\n128 +256 +64 +[5-8] +" "five 128 x 256 stages")
expect("${s}" "\n128 +256 +64 +4 +" "four 128 x 256 stages")
# split-K's partial tile (floats) fits in the stages: 128 x 256 needs three of them
reject("${s}" "\n128 +256 +64 +2 +2 +" "a 128 x 256 float tile in two stages")
expect("${s}" "\n128 +256 +64 +3 +2 +" "a 128 x 256 float tile in three stages")

# kt check --config names the constraint that rejects a configuration
function(reason cfg shape regex)
  run(o check ${TEMPLATE} --arch 90a --shape ${shape} --config ${cfg})
  expect("${o}" "^1\n.*the given configuration violates '${regex}" "${cfg} at ${shape}")
endfunction()
# and accepts one that it should
function(feasible cfg shape why)
  run(o check ${TEMPLATE} --arch 90a --shape ${shape} --config ${cfg})
  expect("${o}" "^0\n" "${why}")
endfunction()
reason(BM=256,BN=128,WGM=64,STAGES=4,SPLITK=1,GROUP=8,PERSIST=0,SWAP=0,STREAM=false M=16,N=4096,K=200 "SWAP == 1 \\|\\| \\(BM >= 64 && BM % WGM == 0 && BM / WGM <= 2\\)")
reason(BM=128,BN=256,WGM=64,STAGES=5,SPLITK=1,GROUP=8,PERSIST=0,SWAP=0,STREAM=false M=16,N=4096,K=200 "STAGES \\* \\(BM \\+ BN\\) \\* 128 \\+ 1024 \\+ PERSIST \\* BM \\* 144 <= 231424")
reason(BM=128,BN=256,WGM=64,STAGES=2,SPLITK=2,GROUP=8,PERSIST=0,SWAP=0,STREAM=false M=16,N=4096,K=200 "\\(SPLITK == 1 && SWAP == 0\\) \\|\\| BM \\* \\(BN \\+ 4\\) \\* 4")
reason(BM=64,BN=64,WGM=64,STAGES=2,SPLITK=4,GROUP=8,PERSIST=0,SWAP=0,STREAM=false M=16,N=4096,K=200 "SPLITK \\* 2 <= cdiv\\(K, 64\\)")
reason(BM=64,BN=64,WGM=64,STAGES=2,SPLITK=1,GROUP=8,PERSIST=0,SWAP=0,STREAM=false M=16,N=4100,K=200 "N % 8 == 0 && K % 8 == 0")
# a persistent grid walks whole tiles: split-K's clusters are not persistent
reason(BM=128,BN=128,WGM=128,STAGES=6,SPLITK=2,GROUP=8,PERSIST=1,SWAP=0,STREAM=false M=16,N=4096,K=4096 "PERSIST == 0 \\|\\| SPLITK == 1")
feasible(BM=128,BN=128,WGM=128,STAGES=6,SPLITK=1,GROUP=8,PERSIST=1,SWAP=0,STREAM=false M=16,N=4096,K=4096 "a persistent grid without split-K")
run(o check ${TEMPLATE} --arch 90 --shape M=16,N=4096,K=4096 --config BM=64,BN=64,WGM=64,STAGES=2,SPLITK=1,GROUP=8,PERSIST=0,SWAP=0,STREAM=false)
expect("${o}" "^1\n.*the given configuration violates 'sm == 90 && sm_a'" "sm_90 without a")
# the swapped product: 8 to 64 rows of A a block, one consumer, not persistent; the plain one
# takes 64 rows or more
reason(BM=16,BN=64,WGM=64,STAGES=4,SPLITK=1,GROUP=8,PERSIST=0,SWAP=0,STREAM=false M=16,N=4096,K=4096 "SWAP == 1 \\|\\| \\(BM >= 64")
reason(BM=128,BN=64,WGM=64,STAGES=4,SPLITK=1,GROUP=8,PERSIST=0,SWAP=1,STREAM=false M=16,N=4096,K=4096 "SWAP == 0 \\|\\| \\(BM <= 64 && WGM == 64 && PERSIST == 0 && M <= 64\\)")
reason(BM=64,BN=64,WGM=128,STAGES=4,SPLITK=1,GROUP=8,PERSIST=0,SWAP=1,STREAM=false M=16,N=4096,K=4096 "SWAP == 0 \\|\\| \\(BM <= 64")
reason(BM=64,BN=128,WGM=64,STAGES=4,SPLITK=1,GROUP=8,PERSIST=1,SWAP=1,STREAM=false M=16,N=4096,K=4096 "SWAP == 0 \\|\\| \\(BM <= 64")
# past 64 rows of A the swapped product would read the weight once per tile of rows
reason(BM=64,BN=128,WGM=64,STAGES=4,SPLITK=1,GROUP=8,PERSIST=0,SWAP=1,STREAM=false M=65,N=4096,K=4096 "SWAP == 0 \\|\\| \\(BM <= 64 && WGM == 64 && PERSIST == 0 && M <= 64\\)")
feasible(BM=64,BN=128,WGM=64,STAGES=4,SPLITK=1,GROUP=8,PERSIST=0,SWAP=1,STREAM=false M=64,N=4096,K=4096 "the swapped product at M = 64")
feasible(BM=8,BN=256,WGM=64,STAGES=6,SPLITK=4,GROUP=8,PERSIST=0,SWAP=1,STREAM=false M=1,N=4096,K=4096 "8 rows of A on wgmma's N, split in 4")
run(s space ${TEMPLATE} --arch 90a --shape M=16,N=4096,K=4096)
expect("${s}" "\n8 +64 +64 +[2-8] +1 +[18] +0 +1" "8-row swapped tiles at a decode shape")
expect("${s}" "\n64 +256 +64 +[2-8] +[1248] +[18] +0 +1" "64 x 256 swapped tiles")
reject("${s}" "\n(8|16|32) +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[18] +[01] +0" "fewer than 64 rows without the swap")
reject("${s}" "\n(128|256) +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[18] +[01] +1" "128 rows or more swapped")
message("gemm_sm90's constraints hold, each with its reason")
