/* ad_rpfs.h: the rpfs ROMIO driver's private header.
 *
 * The driver is ROMIO glue only: it turns ADIO calls into calls of librpfs
 * (client/rpfs.h), which does all protocol and transport work. What it
 * shares with the Open MPI components (ompi/) is librpfs's MPI glue
 * (client/rpfs_mpi.h): the process's client, made at the first open and
 * finalized once MPI_COMM_SELF is freed in MPI_Finalize and the last open
 * file is closed; the open rights; the size a read trusts; the lists of
 * list I/O; the MPI error classes. */
#ifndef AD_RPFS_H_INCLUDED
#define AD_RPFS_H_INCLUDED

#include "adio.h"
#include <rpfs.h>
#include <rpfs_mpi.h>

/* Per-file state behind fd->fs_ptr. */
/* Which way data moves, where one function serves both. */
typedef enum ADIOI_RPFS_dir { ADIOI_RPFS_READ, ADIOI_RPFS_WRITE } ADIOI_RPFS_dir;

typedef struct ADIOI_RPFS_fs {
	rpfs_file_t *file;
	struct rpfs_stat st; /* attributes as opened (size not kept here) */
	char redundancy[RPFS_REDUNDANCY_MAX]; /* the file's ("mirror:2") */
	uint64_t known_size;		      /* a lower bound of the file size, so reads
					       * within it need no size query for status
					       * (rpfs_mpi_read_count) */
} ADIOI_RPFS_fs;

/* What rank 0 of an open broadcasts: the result, the attributes and, on
 * failure, the message that names the server and the cause. */
#define ADIOI_RPFS_MSG_MAX 480
typedef struct ADIOI_RPFS_open_result {
	int32_t err; /* 0 or a negative errno */
	int32_t pad;
	struct rpfs_stat st;
	char redundancy[RPFS_REDUNDANCY_MAX]; /* not in st: rpfs_file_redundancy */
	uint64_t size;			      /* for MPI_MODE_APPEND */
	char msg[ADIOI_RPFS_MSG_MAX];
} ADIOI_RPFS_open_result;

/* The process's client (rpfs_mpi_client), made at the first call with
 * the hints of fd (NULL: none). Returns 0 or a negative errno (then
 * *error_code is set). Files opened on it are counted by
 * rpfs_mpi_file_opened/closed (ad_rpfs_open.c). */
int ADIOI_RPFS_Init(ADIO_File fd, rpfs_client_t **client, int *error_code);

/* The absolute rpfs path of a name: relative names are taken relative to
 * RPFS_CWD or the root (ad_rpfs_path.c). ADIOI_Malloc'd, or NULL with
 * *error_code set. */
char *ADIOI_RPFS_Path(const char *myname, const char *name, int *error_code);

/* An MPI error code of the class of rpfs_error (rpfs_mpi_err_class) whose
 * message is "what: msg" (ad_rpfs_error.c). */
int ADIOI_RPFS_Err(const char *myname, int line, int rpfs_error, const char *what,
		   const char *msg);

/* Hints: the creation layout and the reported layout (ad_rpfs_hints.c). */
void ADIOI_RPFS_Create_opts(ADIO_File fd, struct rpfs_create_opts *opts);
void ADIOI_RPFS_Report_layout(ADIO_File fd, const struct rpfs_stat *st,
			      const char *redundancy);

/* File-view flattening into one list of memory and file pieces
 * (ad_rpfs_io_list.c); used by the blocking and nonblocking strided paths.
 * l->end of an empty list is where the access starts (the file pointer or
 * 0). Returns 0 or -ENOMEM (the list is then freed). */
typedef struct rpfs_mpi_list ADIOI_RPFS_list;
int ADIOI_RPFS_Build_list(ADIO_File fd, const void *buf, int count, MPI_Datatype datatype,
			  int file_ptr_type, ADIO_Offset offset, ADIOI_RPFS_list *list);

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
