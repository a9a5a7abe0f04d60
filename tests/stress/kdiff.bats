#!/usr/bin/env bats
# Long runs of the differential test against kernel overlayfs (make
# stress; tests/75-kdiff.bats has the short one and says what is
# compared): STRESS_KDIFF_COUNT sequences of STRESS_KDIFF_OPS operations
# per whiteout style, from a fresh random first seed (printed) or
# KDIFF_SEED. A failure's report names each seed that disagrees;
# KDIFF_SEED=S KDIFF_COUNT=1 KDIFF_OPS=N tests/run tests/75-kdiff.bats
# replays one.

load ../helpers/common
load ../helpers/kdiff
load lib

COUNT=${STRESS_KDIFF_COUNT:-1000}
OPS=${STRESS_KDIFF_OPS:-100}

setup_file() {
	sfs_setup_file 1
}

teardown_file() {
	sfs_cleanup_file
}

setup() {
	sfs_setup_branches
	kd_init
}

teardown() {
	sfs_cleanup
}

@test "stress: kdiff against kernel overlayfs, -o whiteout=overlay" {
	local seed
	seed=$(st_seed "${KDIFF_SEED:-}")
	st_say "kdiff: whiteout=overlay, first seed $seed, $COUNT sequences of $OPS operations"
	kd_run overlay "$seed" "$COUNT" "$OPS"
}

@test "stress: kdiff against kernel overlayfs, -o whiteout=wh" {
	local seed
	seed=$(st_seed "${KDIFF_SEED:-}")
	st_say "kdiff: whiteout=wh, first seed $seed, $COUNT sequences of $OPS operations"
	kd_run wh "$seed" "$COUNT" "$OPS"
}

@test "stress: kdiff against kernel overlayfs with a middle layer the kernel wrote (--mid), -o whiteout=overlay" {
	local seed
	seed=$(st_seed "${KDIFF_SEED:-}")
	st_say "kdiff --mid: whiteout=overlay, first seed $seed, $COUNT sequences of $OPS operations"
	kd_run overlay "$seed" "$COUNT" "$OPS" --mid
}
