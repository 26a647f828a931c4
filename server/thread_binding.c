/* rpfsd thread binding with hwloc (where the progress thread and the
 * workers run; where data goes is the layout's business, meta.c).
 *
 * The progress thread touches every message and RDMA completion, and the
 * workers copy data through the same caches, so on a machine with an RDMA
 * NIC they belong on the NIC's NUMA node: the progress thread on its first
 * core, the workers on the node's other cores (all of them if it has one).
 * Without an OpenFabrics device the progress thread takes core 0 and the
 * workers the rest of the machine.
 *
 * Binding is on by default only with more than 2 cores (on 2 cores pinning
 * just takes the scheduler's freedom away); RPFS_BIND=0 turns it off,
 * RPFS_BIND=1 forces it. A binding that fails (containers often forbid it)
 * is logged at info and ignored: placement is an optimisation, never a
 * reason not to serve. */
#include <errno.h>
#include <hwloc.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "server.h"

struct place {
	hwloc_topology_t topo;
	hwloc_bitmap_t progress; /* cpus of the progress thread */
	hwloc_bitmap_t workers;	 /* cpus of the workers */
	char where[128];	 /* what decided it, for the log */
};

static hwloc_obj_t find_rdma_dev(hwloc_topology_t topo)
{
	hwloc_obj_t o = NULL;

	while ((o = hwloc_get_next_osdev(topo, o)))
		if (o->attr && o->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS)
			return o;
	return NULL;
}

/* The cpus of set's first core (or first PU if there are no cores). */
static hwloc_bitmap_t first_core(hwloc_topology_t topo, hwloc_const_bitmap_t set)
{
	hwloc_obj_t o = hwloc_get_obj_inside_cpuset_by_type(topo, set, HWLOC_OBJ_CORE, 0);

	if (!o)
		o = hwloc_get_obj_inside_cpuset_by_type(topo, set, HWLOC_OBJ_PU, 0);
	return o && o->cpuset ? hwloc_bitmap_dup(o->cpuset) : NULL;
}

static int decide(struct srv *s, struct place *pl)
{
	hwloc_const_bitmap_t all = hwloc_topology_get_topology_cpuset(pl->topo);
	hwloc_obj_t dev = find_rdma_dev(pl->topo);
	hwloc_const_bitmap_t node = all;

	(void)s;
	if (dev) {
		hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(pl->topo, dev);

		if (anc && anc->cpuset && !hwloc_bitmap_iszero(anc->cpuset))
			node = anc->cpuset;
		snprintf(pl->where, sizeof(pl->where), "near RDMA device %s", dev->name);
	} else {
		snprintf(pl->where, sizeof(pl->where), "no RDMA device");
	}
	pl->progress = first_core(pl->topo, node);
	if (!pl->progress)
		return -ENODEV;
	pl->workers = hwloc_bitmap_alloc();
	if (!pl->workers)
		return -ENOMEM;
	hwloc_bitmap_andnot(pl->workers, node, pl->progress);
	if (hwloc_bitmap_iszero(pl->workers))
		hwloc_bitmap_copy(pl->workers, node);
	return 0;
}

void binding_init(struct srv *s)
{
	const char *env = getenv("RPFS_BIND");
	struct place *pl;
	int ncores, ret;

	if (env && !strcmp(env, "0"))
		return;
	pl = calloc(1, sizeof(*pl));
	if (!pl)
		return;
	/* Count cores first without I/O discovery: that part loads plugins
	 * (PCI) that cost time and are only needed once we do bind. */
	if (hwloc_topology_init(&pl->topo)) {
		free(pl);
		return;
	}
	if (hwloc_topology_load(pl->topo)) {
		log_info("rpfsd: hwloc couldn't load the topology: threads not bound");
		goto fail;
	}
	ncores = hwloc_get_nbobjs_by_type(pl->topo, HWLOC_OBJ_CORE);
	if (ncores <= 0)
		ncores = hwloc_get_nbobjs_by_type(pl->topo, HWLOC_OBJ_PU);
	if (!(env && !strcmp(env, "1")) && ncores <= 2) {
		log_info("rpfsd: %d cores: threads not bound (RPFS_BIND=1 forces it)",
			 ncores);
		goto fail;
	}
	hwloc_topology_destroy(pl->topo);
	if (hwloc_topology_init(&pl->topo)) {
		free(pl);
		return;
	}
	hwloc_topology_set_io_types_filter(pl->topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	if (hwloc_topology_load(pl->topo)) {
		log_info("rpfsd: hwloc couldn't load the topology: threads not bound");
		goto fail;
	}
	ret = decide(s, pl);
	if (ret) {
		log_info("rpfsd: no cpus to bind to: threads not bound");
		goto fail;
	}
	s->place = pl;
	return;

fail:
	if (pl->progress)
		hwloc_bitmap_free(pl->progress);
	if (pl->workers)
		hwloc_bitmap_free(pl->workers);
	hwloc_topology_destroy(pl->topo);
	free(pl);
}

static void bind_self(struct place *pl, hwloc_const_bitmap_t set, const char *who)
{
	char *str = NULL;

	hwloc_bitmap_list_asprintf(&str, set);
	if (hwloc_set_cpubind(pl->topo, set, HWLOC_CPUBIND_THREAD))
		log_info("rpfsd: couldn't bind %s to cpus %s: %s (ignored)", who,
			 str ? str : "?", strerror(errno));
	else
		log_info("rpfsd: %s bound to cpus %s (%s)", who, str ? str : "?",
			 pl->where);
	free(str);
}

void binding_progress_thread(struct srv *s)
{
	if (s->place)
		bind_self(s->place, s->place->progress, "progress thread");
}

void binding_worker(struct srv *s, int i)
{
	char who[32];

	if (!s->place)
		return;
	snprintf(who, sizeof(who), "worker %d", i);
	bind_self(s->place, s->place->workers, who);
}

void binding_fini(struct srv *s)
{
	struct place *pl = s->place;

	if (!pl)
		return;
	hwloc_bitmap_free(pl->progress);
	hwloc_bitmap_free(pl->workers);
	hwloc_topology_destroy(pl->topo);
	free(pl);
	s->place = NULL;
}
