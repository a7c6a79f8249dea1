#!/usr/bin/env bash
# deps.sh: installs the Debian packages that kt needs, only those that are missing.
#
#   scripts/deps.sh [--list | --check] build|test
#
#   build    what building kt and using it in a project need (the README's main job)
#   test     that, and what kt's tests need (the README's test command, .ci/run)
#   --list   print the packages of the mode, one a line, and exit
#   --check  say what is missing and exit 1 if anything is; install nothing
#
# It says what it checks and what it installs; it runs apt-get only when a package is missing,
# and only then asks for root (through sudo, unless it runs as root).  Running it again installs
# nothing.  The CUDA Toolkit is not a Debian package that kt installs: the script looks for nvcc
# where kt's CMake files do (PATH, $CUDACXX, $CUDA_PATH/bin, /usr/local/cuda/bin; see
# cmake/KtCudaCompiler.cmake) and says which it found.
set -euo pipefail

me=scripts/deps.sh

# Building kt and a project that uses it.  g++: nvcc needs a host C++ compiler, and projects that
# call generated launchers from C++ need one too.
build_packages=(cmake ninja-build gcc g++ libcjson-dev libxxhash-dev libcurl4-openssl-dev)

# What kt's tests need on top (the cache suite's WebDAV server, the test fixtures in Python, the
# wheel suite's venv and pip, the farm suite's single-node Slurm cluster).
test_packages=(nginx-light python3 python3-venv python3-pip chromium slurmctld slurmd slurm-client munge)

usage() {
	echo "usage: $me [--list | --check] build|test" >&2
	exit 2
}

action=install
case ${1-} in
--list) action=list; shift ;;
--check) action=check; shift ;;
esac
(($# == 1)) || usage
case $1 in
build) packages=("${build_packages[@]}") ;;
test) packages=("${build_packages[@]}" "${test_packages[@]}") ;;
*) echo "$me: unknown mode '$1' (expected build or test)" >&2; usage ;;
esac
mode=$1

if [[ $action == list ]]; then
	printf '%s\n' "${packages[@]}"
	exit 0
fi

# The nvcc that kt's CMake files use when CMAKE_CUDA_COMPILER is not given; empty when none.
find_nvcc() {
	if [[ -n ${CUDACXX-} ]]; then
		echo "${CUDACXX%% *}"
	elif command -v nvcc >/dev/null; then
		command -v nvcc
	elif [[ -n ${CUDA_PATH-} && -x $CUDA_PATH/bin/nvcc ]]; then
		echo "$CUDA_PATH/bin/nvcc"
	elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
		echo /usr/local/cuda/bin/nvcc
	fi
}

report_nvcc() {
	local nvcc
	nvcc=$(find_nvcc)
	if [[ -n $nvcc ]]; then
		echo "$me: CUDA compiler: $nvcc ($("$nvcc" --version | tail -n 1))"
		return 0
	fi
	echo "$me: no nvcc found (not in \$CUDACXX, PATH, \$CUDA_PATH/bin or /usr/local/cuda/bin):" \
		"install NVIDIA's CUDA Toolkit, or name its compiler with CUDACXX=/path/to/nvcc" >&2
	if [[ $mode == build ]]; then
		return 1
	fi
	echo "$me: kt builds without it, and its tests that need nvcc will report themselves skipped" >&2
}

if ! command -v dpkg-query >/dev/null; then
	echo "$me: this is not a Debian-like system (no dpkg-query), so nothing is checked or" \
		"installed; kt needs the equivalents of these Debian packages: ${packages[*]}" >&2
	report_nvcc
	exit 0
fi

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[[ $status == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
	echo "$me: all ${#packages[@]} packages for '$mode' are installed (${packages[*]})"
elif [[ $action == check ]]; then
	echo "$me: missing for '$mode': ${missing[*]}" >&2
	exit 1
else
	echo "$me: missing for '$mode': ${missing[*]}"
	if [[ $(id -u) -eq 0 ]]; then
		echo "$me: installing them with apt-get"
		sudo=()
	elif command -v sudo >/dev/null; then
		echo "$me: installing them with apt-get, as root through sudo"
		sudo=(sudo)
	else
		echo "$me: installing them needs root, and sudo is not installed: as root, run" \
			"apt-get install ${missing[*]}" >&2
		exit 1
	fi
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

report_nvcc
