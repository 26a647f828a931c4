# bench/profile-kinds.awk: sums `perf report --sort comm,dso,sym -g none`
# lines (percent, process, object, [k] or [.], symbol) by process kind and
# by what the CPU was doing, for bench/profile. The symbol groups are the
# Linux 6.x names seen on these machines; anything else is "other".
#
# On a VM without a PMU perf samples on the timer: time spent with
# interrupts off is charged where they are enabled again, so
# _raw_spin_unlock_irq* stands for wake-ups, softirq and page-LRU work that
# cannot be split further here.

function kind_of(comm) {
	if (comm ~ /^rpfsd/)
		return "rpfsd (servers)"
	if (comm == "mpiio_bw")
		return "MPI processes (mpiio_bw, librpfs)"
	if (comm ~ /^swapper/)
		return "idle"
	return "other processes (perf, mpiexec, kernel threads)"
}

function doing(comm, dso, sym) {
	if (comm ~ /^swapper/)
		return "idle (no runnable thread)"
	if (dso ~ /libmpi/)
		return "MPI library: progress loop of ranks waiting in MPI"
	if (comm == "mpiio_bw" && dso == "mpiio_bw")
		return "the benchmark's own work (fill, verify)"
	if (sym ~ /crc32/)
		return "CRC32C of blocks (rpfsd)"
	if (sym ~ /^(_copy_to_iter|_copy_from_iter|copy_page_to_iter|copy_page_from_iter|__skb_datagram_iter|skb_copy_datagram_iter|simple_copy_to_iter)$/)
		return "copies between user memory and sockets (TCP)"
	if (sym ~ /^(copy_folio_from_iter_atomic|shmem_|filemap_|folio_|__folio|clear_page|generic_perform_write|xas_|workingset_|__filemap|mark_page|lru_|memcg|__mem_cgroup|charge_memcg|get_mem_cgroup|security_vm_enough|__alloc_pages|__alloc_frozen|get_page_from_freelist|free_unref|__free_|alloc_pages|vma_alloc)/)
		return "tmpfs page cache (storage copies, page allocation)"
	if (sym ~ /^(tcp_|__tcp|ip_|__ip|inet_|__inet|skb_|__skb|kfree_skb|__kfree_skb|sk_|__sk|sock_|__sock|____sys_sendmsg|___sys_sendmsg|__sys_sendmsg|___sys_recvmsg|__sys_recvmsg|__dev_queue_xmit|dev_hard_start_xmit|loopback_|netif_|__netif|process_backlog|net_rx|__napi|napi_|validate_xmit|release_sock|lock_sock|__release_sock|ipv4_|nf_|__check_object_size|check_heap_object|__virt_addr_valid)/)
		return "TCP/IP stack (loopback)"
	if (sym ~ /^(handle_softirqs|do_softirq|__do_softirq|__local_bh_enable_ip|__irq_exit_rcu|irq_exit)/)
		return "softirq entry (mostly TCP receive)"
	if (sym ~ /^_raw_spin_unlock_irq/)
		return "interrupts enabled again (wake-ups, softirq, page LRU)"
	if (sym ~ /^(finish_task_switch|__schedule|schedule|try_to_wake_up|ttwu_|select_task_rq|enqueue_|dequeue_|update_curr|pick_next|__pick|set_next_entity|put_prev|psi_|futex_|__futex|do_futex|pthread_|__pthread|sched_yield|__sched_yield|do_sched_yield|yield_task|__x64_sys_sched_yield|ep_|do_epoll|__x64_sys_epoll|epoll_wait|__GI___pthread|__lll_lock|__lll_unlock|native_queued_spin|__pv_queued|__raw_callee_save|_raw_spin_lock|_raw_spin_unlock$|_raw_spin_unlock_bh)/)
		return "scheduling, wake-ups, locks, epoll"
	if (sym ~ /^(entry_SYSCALL|do_syscall_64|syscall_exit|__x64_sys|__sys_|fdget|__fget|exit_to_user|irqentry_|syscall_return|__rseq|rseq_)/)
		return "system call entry and exit"
	if (sym ~ /(exc_page_fault|handle_mm_fault|do_anonymous_page|__handle_mm_fault|do_user_addr_fault|do_fault|clear_page)/)
		return "page faults"
	if (dso ~ /^\[kernel/)
		return "other kernel"
	return "other user space (" (comm ~ /^rpfsd/ ? "rpfsd" : comm) ")"
}

/^ *[0-9.]+%/ {
	pct = $1
	sub(/%$/, "", pct)
	sym = $NF
	dso = $(NF - 2)
	comm = $2
	for (i = 3; i <= NF - 3; i++)
		comm = comm " " $i
	by_kind[kind_of(comm)] += pct
	by_doing[doing(comm, dso, sym)] += pct
	if (comm ~ /^rpfsd/)
		srv_doing[doing(comm, dso, sym)] += pct
	total += pct
}

function table(title, arr,    n, i, k, keys, j, t, small) {
	n = 0
	small = 0
	for (k in arr)
		if (arr[k] < 0.1)
			small += arr[k]
		else
			keys[++n] = k
	# sort by value, largest first (insertion sort: few keys)
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && arr[keys[j]] > arr[keys[j - 1]]; j--) {
			t = keys[j]
			keys[j] = keys[j - 1]
			keys[j - 1] = t
		}
	printf "%s\n", title
	for (i = 1; i <= n; i++)
		printf "  %6.1f%%  %s\n", arr[keys[i]], keys[i]
	if (small > 0)
		printf "  %6.1f%%  (groups under 0.1%% each)\n", small
}

END {
	table("by process:", by_kind)
	table("by what the CPU was doing:", by_doing)
	table("rpfsd only, by what it was doing (percent of all samples):", srv_doing)
}
