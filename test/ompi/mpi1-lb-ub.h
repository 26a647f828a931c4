/* mpi1-lb-ub.h: MPI_LB and MPI_UB for ROMIO's noncontig tests under Open MPI.
 *
 * MPI-3.0 removed the MPI_LB/MPI_UB markers; Open MPI 4.1 built without
 * --enable-mpi1-compatibility (as Debian's is) turns them into a static
 * assertion in mpi.h, but its library still exports the two predefined
 * datatypes and its datatype engine still honours them. ROMIO's
 * i_noncontig, noncontig, noncontig_coll and noncontig_coll2 build their
 * file views with them, so run-ompi-tests.sh compiles those four with
 * `-include` of this header, which restores the two names exactly as
 * mpi.h declares them in a compatibility build. */
#include <mpi.h>

#undef MPI_LB
#undef MPI_UB
OMPI_DECLSPEC extern struct ompi_predefined_datatype_t ompi_mpi_lb;
OMPI_DECLSPEC extern struct ompi_predefined_datatype_t ompi_mpi_ub;
#define MPI_LB OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_lb)
#define MPI_UB OMPI_PREDEFINED_GLOBAL(MPI_Datatype, ompi_mpi_ub)
