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
 * rank accesses, and use each rank's list I/O when it is at least
 * ADIOI_RPFS_CB_PIECE bytes, ROMIO's two-phase code otherwise. "enable"
 * always aggregates and "disable" never does, as in ROMIO (so do persistent
 * file realms, romio_cb_pfr, a form of aggregation). ROMIO itself goes
 * independent only when the ranks' accesses do not interleave at all. */
#include "ad_rpfs.h"

/* Measured with tile I/O (4 servers, tcp on loopback, 2 and 4 processes):
 * list I/O beat two-phase at 24 KiB pieces and lost at 4 KiB and below. */
#define ADIOI_RPFS_CB_PIECE ((ADIO_Offset)16384)

/* The average contiguous piece of this rank's access in the file: the
 * whole request when the view is contiguous, else the mean block of the
 * filetype (no larger than the request). A rank that moves nothing does
 * not count. */
static ADIO_Offset my_piece(ADIO_File fd, int count, MPI_Datatype datatype)
{
	ADIOI_Flatlist_node *flat;
	ADIO_Offset bytes, sum = 0, blocks = 0;
	MPI_Count size;
	int contig;

	MPI_Type_size_x(datatype, &size);
	bytes = (ADIO_Offset)count * (ADIO_Offset)size;
	if (bytes <= 0)
		return ADIOI_RPFS_CB_PIECE;
	ADIOI_Datatype_iscontig(fd->filetype, &contig);
	if (contig)
		return bytes;
	flat = ADIOI_Flatten_and_find(fd->filetype);
	for (MPI_Count i = 0; i < flat->count; i++) {
		if (flat->blocklens[i] > 0) {
			sum += flat->blocklens[i];
			blocks++;
		}
	}
	if (!blocks)
		return bytes;
	return sum / blocks < bytes ? sum / blocks : bytes;
}

/* Should this collective call be each rank's own list I/O? Collective:
 * every rank of fd->comm calls it with the same hint. */
static int independent(ADIO_File fd, int count, MPI_Datatype datatype, int hint)
{
	ADIO_Offset mine, least;

	if (hint == ADIOI_HINT_ENABLE || fd->hints->cb_pfr == ADIOI_HINT_ENABLE)
		return 0;
	if (hint == ADIOI_HINT_DISABLE)
		return 1;
	mine = my_piece(fd, count, datatype);
	MPI_Allreduce(&mine, &least, 1, ADIO_OFFSET, MPI_MIN, fd->comm);
	return least >= ADIOI_RPFS_CB_PIECE;
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
