/* ad_rpfs_coll.c: blocking collective reads and writes.
 *
 * Two-phase collective buffering exists to turn many small noncontiguous
 * accesses into a few large contiguous ones: aggregators exchange the data
 * with MPI, then each moves its file domain. rpfs already serves a rank's
 * whole noncontiguous access as one list request per server, so when every
 * rank's pieces in the file are large the exchange only adds copies and
 * waiting: tile I/O with 24 KiB rows ran collectively at 0.03-0.11x of the
 * same access as each rank's list I/O with 4 processes, 0.8-1.3x with 2.
 * With small pieces the servers pay per piece (a call and a checksum block
 * each), and two-phase wins (4 KiB rows: 2-3x with 2 processes).
 *
 * So, when romio_cb_write / romio_cb_read is "automatic" (the default), all
 * ranks agree (one MPI_Allreduce) on the smallest average file piece any
 * rank accesses and on the most pieces any rank has, and use each rank's
 * own access when the pieces are at least ADIOI_RPFS_CB_PIECE bytes or no
 * rank has more than one (a contiguous access per rank: aggregating only
 * merges neighbours' blocks, and 4 ranks on 2 cores waiting in the
 * exchange wrote 4 KiB blocks collectively at 0.8 MB/s against 57 MB/s
 * independently), ROMIO's two-phase code otherwise. "enable"
 * always aggregates and "disable" never does, as in ROMIO (so do persistent
 * file realms, romio_cb_pfr, a form of aggregation). ROMIO itself goes
 * independent only when the ranks' accesses do not interleave at all. */
#include "ad_rpfs.h"

/* Measured with tile I/O (4 servers, tcp on loopback, 2 and 4 processes):
 * list I/O beat two-phase at 24 KiB pieces and lost at 4 KiB and below. */
#define ADIOI_RPFS_CB_PIECE ((ADIO_Offset)16384)

/* This rank's access in the file: the mean contiguous piece (the whole
 * request when the view is contiguous, else the mean block of the
 * filetype, no larger than the request) and about how many pieces. A rank
 * that moves nothing does not count. */
static void my_pieces(ADIO_File fd, int count, MPI_Datatype datatype, ADIO_Offset *piece,
		      ADIO_Offset *pieces)
{
	ADIOI_Flatlist_node *flat;
	ADIO_Offset bytes, sum = 0, blocks = 0;
	MPI_Count size;
	int contig;

	MPI_Type_size_x(datatype, &size);
	bytes = (ADIO_Offset)count * (ADIO_Offset)size;
	*piece = ADIOI_RPFS_CB_PIECE;
	*pieces = 0;
	if (bytes <= 0)
		return;
	*piece = bytes;
	*pieces = 1;
	ADIOI_Datatype_iscontig(fd->filetype, &contig);
	if (contig)
		return;
	flat = ADIOI_Flatten_and_find(fd->filetype);
	for (MPI_Count i = 0; i < flat->count; i++) {
		if (flat->blocklens[i] > 0) {
			sum += flat->blocklens[i];
			blocks++;
		}
	}
	if (blocks && sum / blocks < bytes) {
		*piece = sum / blocks;
		*pieces = (bytes + *piece - 1) / *piece;
	}
}

/* Should this collective call be each rank's own list I/O? Collective:
 * every rank of fd->comm calls it with the same hint. */
static int independent(ADIO_File fd, int count, MPI_Datatype datatype, int hint)
{
	ADIO_Offset mine[2], least[2];

	if (hint == ADIOI_HINT_ENABLE || fd->hints->cb_pfr == ADIOI_HINT_ENABLE)
		return 0;
	if (hint == ADIOI_HINT_DISABLE)
		return 1;
	/* one MPI_MIN over {piece, -pieces}: the smallest piece, the most pieces */
	my_pieces(fd, count, datatype, &mine[0], &mine[1]);
	mine[1] = -mine[1];
	MPI_Allreduce(mine, least, 2, ADIO_OFFSET, MPI_MIN, fd->comm);
	return least[0] >= ADIOI_RPFS_CB_PIECE || -least[1] <= 1;
}

/* Each rank's access on its own, as ROMIO's generic code does for accesses
 * that do not interleave: contiguous in memory and file as one call, else
 * as one list I/O. */
static void own_access(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
		       int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
		       int *error_code, ADIOI_RPFS_dir dir)
{
	int buf_contig, file_contig;

	ADIOI_Datatype_iscontig(datatype, &buf_contig);
	ADIOI_Datatype_iscontig(fd->filetype, &file_contig);
	if (buf_contig && file_contig) {
		if (file_ptr_type == ADIO_EXPLICIT_OFFSET)
			offset = fd->disp + (ADIO_Offset)fd->etype_size * offset;
		else
			offset = 0;
		if (dir == ADIOI_RPFS_READ)
			ADIO_ReadContig(fd, buf, count, datatype, file_ptr_type, offset,
					status, error_code);
		else
			ADIO_WriteContig(fd, buf, count, datatype, file_ptr_type, offset,
					 status, error_code);
	} else if (dir == ADIOI_RPFS_READ) {
		ADIO_ReadStrided(fd, buf, count, datatype, file_ptr_type, offset, status,
				 error_code);
	} else {
		ADIO_WriteStrided(fd, buf, count, datatype, file_ptr_type, offset, status,
				  error_code);
	}
}

void ADIOI_RPFS_ReadStridedColl(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
				int file_ptr_type, ADIO_Offset offset,
				ADIO_Status *status, int *error_code)
{
	if (independent(fd, count, datatype, fd->hints->cb_read))
		own_access(fd, buf, count, datatype, file_ptr_type, offset, status,
			   error_code, ADIOI_RPFS_READ);
	else
		ADIOI_GEN_ReadStridedColl(fd, buf, count, datatype, file_ptr_type, offset,
					  status, error_code);
}

void ADIOI_RPFS_WriteStridedColl(ADIO_File fd, const void *buf, int count,
				 MPI_Datatype datatype, int file_ptr_type,
				 ADIO_Offset offset, ADIO_Status *status, int *error_code)
{
	if (independent(fd, count, datatype, fd->hints->cb_write))
		own_access(fd, (void *)buf, count, datatype, file_ptr_type, offset,
			   status, error_code, ADIOI_RPFS_WRITE);
	else
		ADIOI_GEN_WriteStridedColl(fd, buf, count, datatype, file_ptr_type,
					   offset, status, error_code);
}
