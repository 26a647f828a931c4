/* The client's progress thread: moves a process's transfers while the
 * program computes (issue 16: MPI_File_iwrite must not wait for MPI_Wait to
 * move its data).
 *
 * Without it, only a thread inside librpfs drives the engine, and on tcp
 * the provider moves RMA data only while both sides poll (FACTS: a target
 * asleep for 300 ms delayed a 64 KiB fi_read by 250 ms), so a posted
 * transfer stood still until the program waited for it. The thread is a
 * plain driver of the engine (xport_progress.c), nothing more: it sleeps in
 * the wait fds whenever a round finds nothing to do, never spins (on a node
 * with more ranks than cores a spinning thread would take the core its own
 * program computes on), and runs the deferred callbacks, so a call's reply
 * is handled the moment it arrives. Callers that wait for their own call
 * still poll a little first (short calls finish in microseconds), then
 * sleep on the fabric's cond, which the thread's rounds signal.
 *
 * One thread per fabric, that is per client process: libfabric's wait fds
 * serve all connections, so no more threads would make it faster. */
#define _GNU_SOURCE /* cpu_set_t, pthread_setaffinity_np */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "cpulist.h"
#include "log.h"
#include "xport_engine.h"

/* Long enough to cost nothing when idle, short enough that an operation's
 * timeout (sweep_timeouts, each round) is seen about on time. */
#define THREAD_WAIT_MS 100

/* The thread's scheduling policy follows its work. Idle, it is
 * SCHED_BATCH, whose wake-ups never preempt a running thread: a post wakes
 * it (xp_calls_post), and as an ordinary thread it took the poster's core
 * at once, so with 4 ranks computing on 2 cores a post that should cost
 * microseconds came back after 0.6-12 ms, the rank waiting its turn behind
 * the others; batch, the posts took 5-33 us. Once calls are in flight it is
 * an ordinary thread again: a transfer needs it every millisecond or so (on
 * tcp the provider moves RMA only while its target polls), and a batch
 * thread waits at each wake-up for the running thread's time slice to end.
 * Batch throughout, with two ranks computing and a VM on the same 2 cores,
 * it spent 170 of 238 ms waiting for a CPU and a posted 64 MiB read ended
 * 56 ms after 200 ms of computing rather than within them. A program under
 * a real-time policy keeps its own for the thread. */
struct thread_policy {
	bool follows; /* the process is SCHED_OTHER: switch with the work */
	bool busy;    /* calls in flight: SCHED_OTHER now */
};

static int set_policy(int policy)
{
	struct sched_param sp = {0};

	return pthread_setschedparam(pthread_self(), policy, &sp);
}

static void policy_init(struct thread_policy *tp)
{
	int ret;

	tp->busy = false;
	tp->follows = sched_getscheduler(0) == SCHED_OTHER;
	if (!tp->follows)
		return;
	ret = set_policy(SCHED_BATCH);
	if (ret) {
		tp->follows = false;
		log_info("transport: the progress thread stays SCHED_OTHER: %s",
			 strerror(ret));
	}
}

/* Lock held: calls_busy is the engine's. */
static void policy_follow(struct thread_policy *tp, const struct xp_fabric *fab)
{
	bool busy = fab->calls_busy > 0;

	xp_assert_locked(fab);
	if (!tp->follows || busy == tp->busy)
		return;
	tp->busy = busy;
	if (set_policy(busy ? SCHED_OTHER : SCHED_BATCH))
		tp->follows = false; /* stays as it is: not worth a message a round */
}

/* Lock held: run the tick if it is due (seen within THREAD_WAIT_MS). */
static void tick_maybe(struct xp_fabric *fab)
{
	void (*fn)(void *arg) = fab->tick_fn;
	void *arg = fab->tick_arg;
	int64_t now;

	xp_assert_locked(fab);
	if (!fn || (now = xp_now_ns()) < fab->tick_next_ns)
		return;
	fab->tick_next_ns = now + fab->tick_period_ns;
	fab->tick_running = true;
	xp_unlock(fab);
	fn(arg);
	xp_lock_quiet(fab);
	fab->tick_running = false;
	pthread_cond_broadcast(&fab->cond);
}

static void *progress_main(void *arg)
{
	struct xp_fabric *fab = arg;
	struct thread_policy tp;

	policy_init(&tp);
	xp_lock_quiet(fab);
	while (!fab->thread_stop) {
		policy_follow(&tp, fab);
		/* (while tcp moves RMA, the round sleeps 1 ms at most) */
		xp_engine_sleep_round(fab, THREAD_WAIT_MS);
		xp_engine_let_in(fab);
		if (fab->deferred || __atomic_load_n(&fab->posts, __ATOMIC_ACQUIRE)) {
			xp_unlock(fab);
			xp_engine_run_deferred(fab);
			xp_lock_quiet(fab);
		}
		tick_maybe(fab);
	}
	xp_unlock(fab);
	return NULL;
}

/* progress_cpus: by default the thread inherits the process's CPUs, which
 * is right unless a launcher bound the rank to one core: then the thread
 * and the computation take turns on it, and a transfer moves only in the
 * computation's time slices while the node's other cores may be idle. The
 * setting moves it elsewhere (a spare core, or "all": wherever the
 * scheduler finds room). A placement the kernel refuses (a CPU the
 * process's cgroup does not give it) is reported and the thread stays
 * where it is: placement is an optimisation, not a reason to fail. */
static void place_thread(struct xp_fabric *fab)
{
	const char *want = fab->params.progress_cpus;
	char got[128];
	cpu_set_t set;
	int ret;

	if (!want[0] || cpulist_parse(want, &set))
		return;
	ret = pthread_setaffinity_np(fab->thread, sizeof(set), &set);
	if (!ret)
		ret = pthread_getaffinity_np(fab->thread, sizeof(set), &set);
	if (ret) {
		log_warn("transport: progress_cpus=%s: can't place the progress thread "
			 "there (%s); it runs on the process's CPUs",
			 want, strerror(ret));
		return;
	}
	cpulist_format(&set, got, sizeof(got));
	log_info("transport: progress thread on CPUs %s (progress_cpus=%s)", got, want);
}

int xp_thread_start(struct xp_fabric *fab)
{
	sigset_t all, old;
	int ret;

	if (!fab->can_wait) {
		/* A thread could only poll: it would take a core for nothing. */
		log_info("transport: the provider gives no wait fd; no progress thread");
		return 0;
	}
	/* The program's signals are for the program's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&fab->thread, NULL, progress_main, fab);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		log_err("transport: can't start the progress thread: %s", strerror(ret));
		return -ret;
	}
	/* A name for top -H, perf and the tests that look for it. */
	pthread_setname_np(fab->thread, "rpfs-progress");
	place_thread(fab);
	xp_lock_quiet(fab);
	__atomic_store_n(&fab->has_thread, true, __ATOMIC_RELEASE);
	xp_unlock(fab);
	return 0;
}

void xp_thread_stop(struct xp_fabric *fab)
{
	uint64_t one = 1;

	xp_lock_quiet(fab);
	if (!fab->has_thread) {
		xp_unlock(fab);
		return;
	}
	fab->thread_stop = true;
	xp_unlock(fab);
	/* Wake it from the wait fds rather than wait out its timeout. */
	if (write(fab->post_fd, &one, sizeof(one)) < 0)
		log_dbg("eventfd write: %s", strerror(errno));
	pthread_join(fab->thread, NULL);
	xp_lock_quiet(fab);
	__atomic_store_n(&fab->has_thread, false, __ATOMIC_RELEASE);
	xp_unlock(fab);
}

int xp_fabric_set_tick(struct xp_fabric *fab, void (*fn)(void *arg), void *arg,
		       int period_ms)
{
	if (fn && period_ms <= 0)
		return -EINVAL;
	xp_lock_quiet(fab);
	if (fn && !fab->has_thread) {
		xp_unlock(fab);
		return -ENOTSUP;
	}
	fab->tick_fn = fn;
	fab->tick_arg = arg;
	fab->tick_period_ns = (int64_t)period_ms * 1000000;
	fab->tick_next_ns = xp_now_ns() + fab->tick_period_ns;
	/* Stopping: the caller may free what a tick under way uses. */
	while (!fn && fab->tick_running)
		xp_cond_wait(fab, NULL);
	xp_unlock(fab);
	return 0;
}
