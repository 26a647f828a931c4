/* ad_rpfs.h: the rpfs ROMIO driver's private header.
 *
 * The driver is ROMIO glue only: it turns ADIO calls into calls of librpfs
 * (client/rpfs.h), which does all protocol and transport work. One
 * rpfs client serves every file of a process; it is made at the first open
 * and finalized once MPI_COMM_SELF is freed in MPI_Finalize and the last
 * open file is closed (ad_rpfs_open.c). */
#ifndef AD_RPFS_H_INCLUDED
#define AD_RPFS_H_INCLUDED

#include "adio.h"
#include <rpfs.h>

/* Per-file state behind fd->fs_ptr. */
/* Which way data moves, where one function serves both. */
typedef enum ADIOI_RPFS_dir { ADIOI_RPFS_READ, ADIOI_RPFS_WRITE } ADIOI_RPFS_dir;

typedef struct ADIOI_RPFS_fs {
	rpfs_file_t *file;
	struct rpfs_stat st;	/* attributes as opened (size not kept here) */
	ADIO_Offset known_size; /* a lower bound of the file size, so reads
				 * within it need no size query for status */
} ADIOI_RPFS_fs;

/* What rank 0 of an open broadcasts: the result, the attributes and, on
 * failure, the message that names the server and the cause. */
#define ADIOI_RPFS_MSG_MAX 480
typedef struct ADIOI_RPFS_open_result {
	int32_t err; /* 0 or a negative errno */
	int32_t pad;
	struct rpfs_stat st;
	uint64_t size; /* for MPI_MODE_APPEND */
	char msg[ADIOI_RPFS_MSG_MAX];
} ADIOI_RPFS_open_result;

/* The process's client, made lazily (ad_rpfs_open.c). */
extern rpfs_client_t *ADIOI_RPFS_client;
int ADIOI_RPFS_Init(ADIO_File fd, int *error_code);
/* A file opened by ADIOI_RPFS_Open is closed: the last one ends the client
 * if MPI_Finalize has begun. */
void ADIOI_RPFS_File_closed(void);

/* The absolute rpfs path of a name: relative names are taken relative to
 * RPFS_CWD or the root (ad_rpfs_path.c). ADIOI_Malloc'd, or NULL with
 * *error_code set. */
char *ADIOI_RPFS_Path(const char *myname, const char *name, int *error_code);

/* Errors (ad_rpfs_error.c). */
int ADIOI_RPFS_error_convert(int rpfs_error);
/* The error to report a failed rpfs_init as: -EIO (MPI_ERR_IO), whatever
 * the config's errno, or -ENOMEM. */
int ADIOI_RPFS_Init_error(int rpfs_error);
int ADIOI_RPFS_Err(const char *myname, int line, int rpfs_error, const char *what,
		   const char *msg);

/* Hints: the creation layout and the reported layout (ad_rpfs_hints.c). */
void ADIOI_RPFS_Create_opts(ADIO_File fd, struct rpfs_create_opts *opts);
void ADIOI_RPFS_Report_layout(ADIO_File fd, const struct rpfs_stat *st);

/* File-view flattening into one list of memory and file pieces
 * (ad_rpfs_io_list.c); used by the blocking and nonblocking strided paths. */
typedef struct ADIOI_RPFS_list {
	struct iovec *mem;
	int nmem;
	struct rpfs_seg *file;
	int nfile;
	ADIO_Offset bytes;    /* total bytes in each list */
	ADIO_Offset file_end; /* one past the last file byte touched */
} ADIOI_RPFS_list;
int ADIOI_RPFS_Build_list(ADIO_File fd, const void *buf, int count, MPI_Datatype datatype,
			  int file_ptr_type, ADIO_Offset offset, ADIOI_RPFS_list *list);
void ADIOI_RPFS_Free_list(ADIOI_RPFS_list *list);
/* Bytes of a read that lie before the end of file (MPI counts). */
ADIO_Offset ADIOI_RPFS_Read_count(ADIO_File fd, const struct rpfs_seg *segs, int nsegs,
				  ADIO_Offset moved);
/* Grow the known size to end (the file is known to reach it). */
void ADIOI_RPFS_Wrote(ADIO_File fd, ADIO_Offset end);
/* After a write of bytes bytes ending at end whose result is ret (bytes
 * written or a negative errno): grow the known size only if every byte was
 * written. A write of nothing, a failed or a short one says nothing of the
 * size, and a read's count trusts the known size. */
void ADIOI_RPFS_Write_done(ADIO_File fd, ADIO_Offset end, ADIO_Offset bytes,
			   ADIO_Offset ret);

/* The ADIOI_Fns slots. */
void ADIOI_RPFS_Open(ADIO_File fd, int *error_code);
void ADIOI_RPFS_OpenColl(ADIO_File fd, int rank, int access_mode, int *error_code);
void ADIOI_RPFS_Close(ADIO_File fd, int *error_code);
void ADIOI_RPFS_ReadContig(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
			   int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
			   int *error_code);
void ADIOI_RPFS_WriteContig(ADIO_File fd, const void *buf, int count,
			    MPI_Datatype datatype, int file_ptr_type, ADIO_Offset offset,
			    ADIO_Status *status, int *error_code);
void ADIOI_RPFS_ReadStrided(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
			    int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
			    int *error_code);
void ADIOI_RPFS_WriteStrided(ADIO_File fd, const void *buf, int count,
			     MPI_Datatype datatype, int file_ptr_type, ADIO_Offset offset,
			     ADIO_Status *status, int *error_code);
void ADIOI_RPFS_ReadStridedColl(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
				int file_ptr_type, ADIO_Offset offset,
				ADIO_Status *status, int *error_code);
void ADIOI_RPFS_WriteStridedColl(ADIO_File fd, const void *buf, int count,
				 MPI_Datatype datatype, int file_ptr_type,
				 ADIO_Offset offset, ADIO_Status *status,
				 int *error_code);
void ADIOI_RPFS_IreadContig(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
			    int file_ptr_type, ADIO_Offset offset, ADIO_Request *request,
			    int *error_code);
void ADIOI_RPFS_IwriteContig(ADIO_File fd, const void *buf, int count,
			     MPI_Datatype datatype, int file_ptr_type, ADIO_Offset offset,
			     ADIO_Request *request, int *error_code);
void ADIOI_RPFS_IreadStrided(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
			     int file_ptr_type, ADIO_Offset offset, ADIO_Request *request,
			     int *error_code);
void ADIOI_RPFS_IwriteStrided(ADIO_File fd, const void *buf, int count,
			      MPI_Datatype datatype, int file_ptr_type,
			      ADIO_Offset offset, ADIO_Request *request, int *error_code);
void ADIOI_RPFS_IreadStridedColl(ADIO_File fd, void *buf, int count,
				 MPI_Datatype datatype, int file_ptr_type,
				 ADIO_Offset offset, ADIO_Request *request,
				 int *error_code);
void ADIOI_RPFS_IwriteStridedColl(ADIO_File fd, const void *buf, int count,
				  MPI_Datatype datatype, int file_ptr_type,
				  ADIO_Offset offset, ADIO_Request *request,
				  int *error_code);
void ADIOI_RPFS_Fcntl(ADIO_File fd, int flag, ADIO_Fcntl_t *fcntl_struct,
		      int *error_code);
void ADIOI_RPFS_SetInfo(ADIO_File fd, MPI_Info users_info, int *error_code);
void ADIOI_RPFS_Flush(ADIO_File fd, int *error_code);
void ADIOI_RPFS_Resize(ADIO_File fd, ADIO_Offset size, int *error_code);
void ADIOI_RPFS_Delete(const char *filename, int *error_code);
int ADIOI_RPFS_Feature(ADIO_File fd, int flag);
int ADIOI_RPFS_SetLock(ADIO_File fd, int cmd, int type, ADIO_Offset offset, int whence,
		       ADIO_Offset len);

#endif /* AD_RPFS_H_INCLUDED */
