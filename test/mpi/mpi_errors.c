/* mpi_errors: rpfs failures reach MPI programs as the right error classes,
 * on every rank, with a message that says what failed (the file's path on
 * every rank; the cluster config when that is what cannot be read).
 *
 * Usage: mpiexec -n N mpi_errors rpfs:/dir/base
 * Prints " No Errors" on success, one line per failed check otherwise. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, errs;

static const char *class_name(int cls)
{
	switch (cls) {
	case MPI_SUCCESS:
		return "MPI_SUCCESS";
	case MPI_ERR_NO_SUCH_FILE:
		return "MPI_ERR_NO_SUCH_FILE";
	case MPI_ERR_FILE_EXISTS:
		return "MPI_ERR_FILE_EXISTS";
	case MPI_ERR_ACCESS:
		return "MPI_ERR_ACCESS";
	case MPI_ERR_READ_ONLY:
		return "MPI_ERR_READ_ONLY";
	case MPI_ERR_AMODE:
		return "MPI_ERR_AMODE";
	case MPI_ERR_IO:
		return "MPI_ERR_IO";
	case MPI_ERR_BAD_FILE:
		return "MPI_ERR_BAD_FILE";
	case MPI_ERR_ARG:
		return "MPI_ERR_ARG";
	default:
		return "another class";
	}
}

/* The call returned an error of class want on this rank, and on all. */
static void expect(const char *what, int rc, int want)
{
	int cls = MPI_SUCCESS, ok, all_ok, len;
	char msg[MPI_MAX_ERROR_STRING];

	if (rc != MPI_SUCCESS)
		MPI_Error_class(rc, &cls);
	ok = (cls == want);
	if (!ok) {
		msg[0] = '\0';
		if (rc != MPI_SUCCESS)
			MPI_Error_string(rc, msg, &len);
		printf("rank %d: %s: got %s (%d), want %s: %s\n", rank, what,
		       class_name(cls), cls, class_name(want), msg);
		errs++;
	}
	MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (!all_ok && ok && rank == 0)
		printf("%s: some other rank got a different result\n", what);
}

/* The message of an error names the file (the library's text is kept). */
static void expect_message(const char *what, int rc, const char *needle)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len;

	if (rc == MPI_SUCCESS)
		return;
	MPI_Error_string(rc, msg, &len);
	if (strstr(msg, needle) == NULL) {
		printf("rank %d: %s: message \"%s\" does not mention \"%s\"\n", rank,
		       what, msg, needle);
		errs++;
	}
}

/* ... and does not say what it should not (a handle for a path). */
static void expect_no_message(const char *what, int rc, const char *needle)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len;

	if (rc == MPI_SUCCESS)
		return;
	MPI_Error_string(rc, msg, &len);
	if (strstr(msg, needle) != NULL) {
		printf("rank %d: %s: message \"%s\" mentions \"%s\"\n", rank, what, msg,
		       needle);
		errs++;
	}
}

/* An open whose cluster config (hint rpfs_config) cannot be read fails on
 * every rank with MPI_ERR_IO, the service failing: not with the class of
 * the config's errno (MPI_ERR_NO_SUCH_FILE would blame the data file). The
 * message names the config and the cause. Runs before anything else: the
 * process's rpfs client is made at the first open that succeeds. */
static void expect_bad_config(const char *what, const char *file, const char *config,
			      const char *cause)
{
	MPI_Info info;
	MPI_File fh;
	int rc;

	MPI_Info_create(&info);
	MPI_Info_set(info, "rpfs_config", config);
	rc = MPI_File_open(MPI_COMM_WORLD, file, MPI_MODE_RDONLY, info, &fh);
	MPI_Info_free(&info);
	expect(what, rc, MPI_ERR_IO);
	expect_message(what, rc, config);
	expect_message(what, rc, cause);
	if (rc == MPI_SUCCESS)
		MPI_File_close(&fh);
}

/* A file removed while open: MPI_File_get_size fails on every rank (its
 * datafiles are gone) and every rank's message names the file's path,
 * not its handle: ranks other than 0 open from broadcast attributes. */
static void expect_path_everywhere(const char *gone)
{
	const char *what = "size of a file removed while open";
	MPI_Offset size;
	MPI_File fh;
	int rc;

	rc = MPI_File_open(MPI_COMM_WORLD, gone, MPI_MODE_CREATE | MPI_MODE_RDWR,
			   MPI_INFO_NULL, &fh);
	expect("create of a file to remove while open", rc, MPI_SUCCESS);
	if (rc != MPI_SUCCESS)
		return;
	if (rank == 0 && MPI_File_delete(gone, MPI_INFO_NULL) != MPI_SUCCESS) {
		printf("rank 0: %s: the delete failed\n", what);
		errs++;
	}
	MPI_Barrier(MPI_COMM_WORLD);
	rc = MPI_File_get_size(fh, &size);
	expect(what, rc, MPI_ERR_IO);
	expect_message(what, rc, strrchr(gone, '/'));
	expect_no_message(what, rc, "handle 0x");
	MPI_File_close(&fh);
}

int main(int argc, char **argv)
{
	char missing[512], existing[512], ro[512], gone[512];
	MPI_File fh;
	int rc, total, buf = 42;
	MPI_Status st;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (argc < 2) {
		if (rank == 0)
			fprintf(stderr, "usage: %s rpfs:/path/base\n", argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	snprintf(missing, sizeof(missing), "%s.missing", argv[1]);
	snprintf(existing, sizeof(existing), "%s.exists", argv[1]);
	snprintf(ro, sizeof(ro), "%s.ro", argv[1]);
	snprintf(gone, sizeof(gone), "%s.gone", argv[1]);

	/* a cluster config that is missing, or a directory */
	expect_bad_config("open with a missing cluster config", existing,
			  "/nonexistent-rpfs-dir/rpfs.conf", "No such file or directory");
	expect_bad_config("open with a directory as cluster config", existing, "/proc",
			  "Is a directory");

	/* opening a file that does not exist */
	if (rank == 0)
		MPI_File_delete(missing, MPI_INFO_NULL);
	MPI_Barrier(MPI_COMM_WORLD);
	rc = MPI_File_open(MPI_COMM_WORLD, missing, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
	expect("open of a missing file", rc, MPI_ERR_NO_SUCH_FILE);
	expect_message("open of a missing file", rc, ".missing");

	/* exclusive create of an existing file */
	rc = MPI_File_open(MPI_COMM_WORLD, existing, MPI_MODE_CREATE | MPI_MODE_RDWR,
			   MPI_INFO_NULL, &fh);
	expect("create", rc, MPI_SUCCESS);
	if (rc == MPI_SUCCESS)
		MPI_File_close(&fh);
	rc = MPI_File_open(MPI_COMM_WORLD, existing,
			   MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_RDWR, MPI_INFO_NULL,
			   &fh);
	expect("exclusive create of an existing file", rc, MPI_ERR_FILE_EXISTS);

	/* exclusive create of a new file works, and only once */
	if (rank == 0)
		MPI_File_delete(missing, MPI_INFO_NULL);
	MPI_Barrier(MPI_COMM_WORLD);
	rc = MPI_File_open(MPI_COMM_WORLD, missing,
			   MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY,
			   MPI_INFO_NULL, &fh);
	expect("exclusive create of a new file", rc, MPI_SUCCESS);
	if (rc == MPI_SUCCESS)
		MPI_File_close(&fh);

	/* writing through a read-only handle */
	rc = MPI_File_open(MPI_COMM_WORLD, existing, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
	expect("read-only open", rc, MPI_SUCCESS);
	if (rc == MPI_SUCCESS) {
		rc = MPI_File_write_at(fh, rank * sizeof(int), &buf, 1, MPI_INT, &st);
		expect("write through a read-only handle", rc, MPI_ERR_READ_ONLY);
		MPI_File_close(&fh);
	}

	/* contradictory access modes */
	rc = MPI_File_open(MPI_COMM_WORLD, existing, MPI_MODE_RDONLY | MPI_MODE_CREATE,
			   MPI_INFO_NULL, &fh);
	expect("read-only create", rc, MPI_ERR_AMODE);

	/* deleting a file that does not exist (every rank, independently) */
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		MPI_File_delete(missing, MPI_INFO_NULL);
	MPI_Barrier(MPI_COMM_WORLD);
	rc = MPI_File_delete(missing, MPI_INFO_NULL);
	expect("delete of a missing file", rc, MPI_ERR_NO_SUCH_FILE);

	/* delete-on-close removes the file */
	rc = MPI_File_open(MPI_COMM_WORLD, ro,
			   MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
			   MPI_INFO_NULL, &fh);
	expect("create with delete-on-close", rc, MPI_SUCCESS);
	if (rc == MPI_SUCCESS)
		MPI_File_close(&fh);
	rc = MPI_File_open(MPI_COMM_WORLD, ro, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
	expect("open after delete-on-close", rc, MPI_ERR_NO_SUCH_FILE);

	/* every rank's message names the file */
	expect_path_everywhere(gone);

	if (rank == 0)
		MPI_File_delete(existing, MPI_INFO_NULL);
	MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0) {
		if (total == 0)
			printf(" No Errors\n");
		else
			printf(" Found %d errors\n", total);
	}
	MPI_Finalize();
	return total != 0;
}
