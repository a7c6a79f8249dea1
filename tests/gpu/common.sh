# common.sh - sourced by the GPU test scripts: gpu_start KT WORK_DIR prints the GPU that kt
# tunes on and makes an empty WORK_DIR, or exits 77 (ctest's SKIP_RETURN_CODE) with the reason
# when kt finds no GPU; fail MESSAGE ends the test as failed.
gpu_start() {
	gpu=$("$1" tune --list-gpus)
	case $gpu in
	"no GPU"*) echo "skipped: $gpu"; exit 77 ;;
	esac
	echo "$gpu"
	rm -rf "$2" && mkdir -p "$2" || exit 1
}
fail() { echo "FAIL: $*"; exit 1; }
