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
reject("${s}" "\n[0-9]+ +256 +128 +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[a-z]+ +false" "128 x 256 accumulators in one consumer")
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
reason(BM=256,BN=128,WGM=64,STAGES=4,SPLITK=1,GROUP=8,PERSIST=0,SWAP=0,STREAM=false,SIMT=false,MMA=false M=16,N=4096,K=200 "SIMT == 1 \\|\\| SWAP == 1 \\|\\| \\(BM >= 64 && BM % WGM == 0 && BM / WGM <= 2\\)")
reason(BM=128,BN=256,WGM=64,STAGES=5,SPLITK=1,GROUP=8,PERSIST=0,SWAP=0,STREAM=false,SIMT=false,MMA=false M=16,N=4096,K=200 "SIMT == 1 \\|\\| STAGES \\* \\(BM \\+ BN\\) \\* 128 \\+ 1024 \\+ PERSIST \\* BM \\* 144 \\+ \\(SPLITK - 1\\)")
# split-K's receive area (the peers' rows pushed to the block that sums them) is in the budget:
# a 64 x 256 tile split in 4 fits 5 stages without it, 4 with it
reason(BM=64,BN=256,WGM=64,STAGES=5,SPLITK=4,GROUP=8,PERSIST=0,SWAP=0,STREAM=false,SIMT=false,MMA=false M=16,N=4096,K=4096 "SIMT == 1 \\|\\| STAGES \\* \\(BM \\+ BN\\) \\* 128 \\+ 1024 \\+ PERSIST \\* BM \\* 144 \\+ \\(SPLITK - 1\\) \\* \\(BM / SPLITK\\)")
feasible(BM=64,BN=256,WGM=64,STAGES=4,SPLITK=4,GROUP=8,PERSIST=0,SWAP=0,STREAM=false,SIMT=false,MMA=false M=16,N=4096,K=4096 "a 64 x 256 tile split in 4, in 4 stages")
reason(BM=128,BN=256,WGM=64,STAGES=2,SPLITK=2,GROUP=8,PERSIST=0,SWAP=0,STREAM=false,SIMT=false,MMA=false M=16,N=4096,K=200 "\\(SPLITK == 1 && SWAP == 0\\) \\|\\| BM \\* \\(BN \\+ 4\\) \\* 4")
reason(BM=64,BN=64,WGM=64,STAGES=2,SPLITK=4,GROUP=8,PERSIST=0,SWAP=0,STREAM=false,SIMT=false,MMA=false M=16,N=4096,K=200 "SPLITK \\* 2 <= cdiv\\(K, 64\\)")
reason(BM=64,BN=64,WGM=64,STAGES=2,SPLITK=1,GROUP=8,PERSIST=0,SWAP=0,STREAM=false,SIMT=false,MMA=false M=16,N=4100,K=200 "N % 8 == 0 && K % 8 == 0")
# a persistent grid walks whole tiles: split-K's clusters are not persistent
reason(BM=128,BN=128,WGM=128,STAGES=5,SPLITK=2,GROUP=8,PERSIST=1,SWAP=0,STREAM=false,SIMT=false,MMA=false M=16,N=4096,K=4096 "PERSIST == 0 \\|\\| SPLITK == 1")
feasible(BM=128,BN=128,WGM=128,STAGES=6,SPLITK=1,GROUP=8,PERSIST=1,SWAP=0,STREAM=false,SIMT=false,MMA=false M=16,N=4096,K=4096 "a persistent grid without split-K")
run(o check ${TEMPLATE} --arch 90 --shape M=16,N=4096,K=4096 --config BM=64,BN=64,WGM=64,STAGES=2,SPLITK=1,GROUP=8,PERSIST=0,SWAP=0,STREAM=false,SIMT=false,MMA=false)
expect("${o}" "^1\n.*the given configuration violates 'sm == 90 && sm_a'" "sm_90 without a")
# the swapped product: 8 to 64 rows of A a block, one consumer, not persistent; the plain one
# takes 64 rows or more
reason(BM=16,BN=64,WGM=64,STAGES=4,SPLITK=1,GROUP=8,PERSIST=0,SWAP=0,STREAM=false,SIMT=false,MMA=false M=16,N=4096,K=4096 "SIMT == 1 \\|\\| SWAP == 1 \\|\\| \\(BM >= 64")
reason(BM=128,BN=64,WGM=64,STAGES=4,SPLITK=1,GROUP=8,PERSIST=0,SWAP=1,STREAM=false,SIMT=false,MMA=false M=16,N=4096,K=4096 "SWAP == 0 \\|\\| \\(BM <= 64 && WGM == 64 && PERSIST == 0 && M <= 64\\)")
reason(BM=64,BN=64,WGM=128,STAGES=4,SPLITK=1,GROUP=8,PERSIST=0,SWAP=1,STREAM=false,SIMT=false,MMA=false M=16,N=4096,K=4096 "SWAP == 0 \\|\\| \\(BM <= 64")
reason(BM=64,BN=128,WGM=64,STAGES=4,SPLITK=1,GROUP=8,PERSIST=1,SWAP=1,STREAM=false,SIMT=false,MMA=false M=16,N=4096,K=4096 "SWAP == 0 \\|\\| \\(BM <= 64")
# past 64 rows of A the swapped product would read the weight once per tile of rows
reason(BM=64,BN=128,WGM=64,STAGES=4,SPLITK=1,GROUP=8,PERSIST=0,SWAP=1,STREAM=false,SIMT=false,MMA=false M=65,N=4096,K=4096 "SWAP == 0 \\|\\| \\(BM <= 64 && WGM == 64 && PERSIST == 0 && M <= 64\\)")
feasible(BM=64,BN=128,WGM=64,STAGES=4,SPLITK=1,GROUP=8,PERSIST=0,SWAP=1,STREAM=false,SIMT=false,MMA=false M=64,N=4096,K=4096 "the swapped product at M = 64")
feasible(BM=8,BN=256,WGM=64,STAGES=6,SPLITK=4,GROUP=8,PERSIST=0,SWAP=1,STREAM=false,SIMT=false,MMA=false M=1,N=4096,K=4096 "8 rows of A on wgmma's N, split in 4")
run(s space ${TEMPLATE} --arch 90a --shape M=16,N=4096,K=4096)
expect("${s}" "\n8 +64 +64 +[2-8] +1 +[18] +0 +1" "8-row swapped tiles at a decode shape")
expect("${s}" "\n64 +256 +64 +[2-8] +[1248] +[18] +0 +1" "64 x 256 swapped tiles")
reject("${s}" "\n(8|16|32) +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[18] +[01] +0 +[a-z]+ +false" "fewer than 64 rows without the swap (or SIMT)")
reject("${s}" "\n(128|256) +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[18] +[01] +1" "128 rows or more swapped")
# SIMT: 1 to 8 rows of A held in registers, BM the least power of two >= M, the tensor-core
# paths' switches off; none at 9 rows or more
run(s space ${TEMPLATE} --arch 90a --shape M=1,N=4096,K=4096)
expect("${s}" "\n1 +64 +64 +8 +1 +8 +0 +0 +false +true" "SIMT at M = 1")
expect("${s}" "\n1 +256 +128 +2 +8 +8 +0 +0 +false +true" "SIMT, 512 threads, split in 8")
reject("${s}" "\n[2-9][0-9]* +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[a-z]+ +true" "SIMT holding more rows than M = 1 needs")
run(s space ${TEMPLATE} --arch 90a --shape M=8,N=4096,K=4096)
expect("${s}" "\n8 +128 +64 +4 +2 +8 +0 +0 +false +true" "SIMT at M = 8")
reject("${s}" "\n8 +[0-9]+ +[0-9]+ +8 +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[a-z]+ +true" "8 rows of 8-deep chunks in registers")
run(s space ${TEMPLATE} --arch 90a --shape M=9,N=4096,K=4096)
reject("${s}" "true +false\n" "SIMT past 8 rows")
set(_simt "WGM=64,STAGES=4,SPLITK=2,GROUP=8,PERSIST=0,SWAP=0,STREAM=false,SIMT=true,MMA=false")
feasible(BM=4,BN=64,${_simt} M=3,N=4096,K=4096 "SIMT, 4 rows for 3")
reason(BM=8,BN=64,${_simt} M=3,N=4096,K=4096 "SIMT == 0 \\|\\| MMA == 1 \\|\\| \\(M <= BM && BM < 2 \\* M")
reason(BM=2,BN=64,${_simt} M=3,N=4096,K=4096 "SIMT == 0 \\|\\| MMA == 1 \\|\\| \\(M <= BM")
reason(BM=4,BN=64,WGM=64,STAGES=3,SPLITK=2,GROUP=8,PERSIST=0,SWAP=0,STREAM=false,SIMT=true,MMA=false M=3,N=4096,K=4096 "SIMT == 0 \\|\\| MMA == 1 \\|\\| \\(M <= BM")
reason(BM=4,BN=64,WGM=64,STAGES=4,SPLITK=2,GROUP=8,PERSIST=0,SWAP=1,STREAM=false,SIMT=true,MMA=false M=3,N=4096,K=4096 "SIMT == 0 \\|\\| \\(WGM <= 128 && GROUP == 8 && PERSIST == 0 && SWAP == 0 && STREAM == 0\\)")
reason(BM=4,BN=64,WGM=64,STAGES=4,SPLITK=2,GROUP=8,PERSIST=0,SWAP=0,STREAM=true,SIMT=true,MMA=false M=3,N=4096,K=4096 "SIMT == 0 \\|\\| \\(WGM <= 128 && GROUP == 8")
# MMA: the SIMT path's loads on the tensor cores through a ring a warp, 16, 32 or 64 rows of A (at
# least M, the least that holds it), a warp's 64 columns within the block's warps, 64 rows with 256
# threads only, the rings in shared memory
run(s space ${TEMPLATE} --arch 90a --shape M=16,N=4096,K=4096)
expect("${s}" "\n16 +64 +128 +2 +2 +8 +0 +0 +false +true +true" "MMA at M = 16, 512 threads")
expect("${s}" "\n16 +256 +64 +5 +8 +8 +0 +0 +false +true +true" "MMA at M = 16, 4 column warps, 5 stages, split in 8")
reject("${s}" "\n32 +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[a-z]+ +true +true" "MMA holding 32 rows for 16")
run(s space ${TEMPLATE} --arch 90a --shape M=64,N=4096,K=4096)
expect("${s}" "\n64 +64 +64 +3 +2 +8 +0 +0 +false +true +true" "MMA at M = 64, 3 stages")
reject("${s}" "\n64 +[0-9]+ +[0-9]+ +[4-8] +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[a-z]+ +true +true" "four 64-row stages a warp")
reject("${s}" "\n64 +[0-9]+ +128 +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[a-z]+ +true +true" "64 rows with 512 threads")
set(_mma "GROUP=8,PERSIST=0,SWAP=0,STREAM=false,SIMT=true,MMA=true")
feasible(BM=32,BN=64,WGM=64,STAGES=4,SPLITK=2,${_mma} M=17,N=4096,K=4096 "MMA, 32 rows for 17")
feasible(BM=16,BN=64,WGM=64,STAGES=3,SPLITK=1,${_mma} M=1,N=4096,K=4096 "MMA, 16 rows for 1, 3 stages")
reason(BM=16,BN=64,WGM=64,STAGES=2,SPLITK=1,GROUP=8,PERSIST=0,SWAP=1,STREAM=false,SIMT=false,MMA=true M=16,N=4096,K=4096 "MMA == 0 \\|\\| \\(SIMT == 1")
reason(BM=32,BN=64,WGM=64,STAGES=2,SPLITK=1,${_mma} M=16,N=4096,K=4096 "MMA == 0 \\|\\| \\(SIMT == 1 && M <= BM && \\(BM == 16 \\|\\| BM < 2 \\* M\\)")
reason(BM=8,BN=64,WGM=64,STAGES=2,SPLITK=1,${_mma} M=8,N=4096,K=4096 "MMA == 0 \\|\\| \\(SIMT == 1.* BM % 16 == 0")
reason(BM=64,BN=64,WGM=128,STAGES=2,SPLITK=1,${_mma} M=64,N=4096,K=4096 "MMA == 0 \\|\\| \\(SIMT == 1.* \\(WGM == 64 \\|\\| BM <= 32\\)")
reason(BM=16,BN=256,WGM=128,STAGES=3,SPLITK=1,${_mma} M=16,N=4096,K=4096 "MMA == 0 \\|\\| max\\(WGM / 8 \\* STAGES \\* \\(4096 \\+ BM \\* 64\\)")
reason(BM=16,BN=64,WGM=64,STAGES=6,SPLITK=1,${_mma} M=16,N=4096,K=4096 "MMA == 0 \\|\\| max\\(WGM / 8 \\* STAGES")
reason(BM=64,BN=64,WGM=64,STAGES=4,SPLITK=2,${_mma} M=64,N=4096,K=4096 "MMA == 0 \\|\\| max\\(WGM / 8 \\* STAGES")
# the rings and split-K's receive area share the budget: 64 x 256 in 3 stages takes a split in 2, not in 4
reason(BM=64,BN=256,WGM=64,STAGES=3,SPLITK=4,${_mma} M=64,N=4096,K=4096 "MMA == 0 \\|\\| max\\(.*\\) \\+ \\(SPLITK - 1\\)")
feasible(BM=64,BN=256,WGM=64,STAGES=3,SPLITK=2,${_mma} M=64,N=4096,K=4096 "MMA, 64 x 256 in 3 stages, split in 2")
message("gemm_sm90's constraints hold, each with its reason")
