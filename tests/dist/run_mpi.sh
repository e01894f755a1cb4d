#!/usr/bin/env bash
# Runs a command under `mpirun --oversubscribe -np N` on this machine, set up for a
# container run as root (CI): no CMA single-copy (ptrace is blocked), shared memory and
# loopback TCP only, one OpenMP thread a rank. Exits 77 (ctest: skipped) without mpirun.
#   run_mpi.sh N COMMAND [ARGS...]
set -u
np=$1
shift
mpirun=${GLIA_MPIRUN:-$(command -v mpirun)}
if [ -z "$mpirun" ]; then
  echo "skipping: mpirun not found (apt-get install openmpi-bin libopenmpi-dev; ./apps/setup.sh does)"
  exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
exec "$mpirun" --oversubscribe --bind-to none -np "$np" "$@"
