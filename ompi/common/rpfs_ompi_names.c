/* rpfs_ompi_names.c: which files are rpfs's.
 *
 * OMPIO strips no prefix and routes every name to the fs component with
 * the highest priority for it, so the fs component claims "rpfs:" names
 * itself (case-insensitive, as ROMIO matches prefixes) and passes the rest
 * of the name to librpfs. The fbtl and sharedfp components are chosen
 * after the fs component and follow it: they serve exactly the files rpfs's
 * fs component opened, whatever f_fstype says. */
#include "rpfs_ompi.h"

#include <string.h>
#include <strings.h>

const char *rpfs_ompi_path(const char *name)
{
	if (name == NULL ||
	    strncasecmp(name, RPFS_OMPI_PREFIX, RPFS_OMPI_PREFIX_LEN) != 0)
		return NULL;
	return name + RPFS_OMPI_PREFIX_LEN;
}

int rpfs_ompi_owns(const ompio_file_t *fh)
{
	return fh->f_fs_component != NULL &&
	       strcmp(fh->f_fs_component->mca_component_name, RPFS_OMPI_NAME) == 0;
}
