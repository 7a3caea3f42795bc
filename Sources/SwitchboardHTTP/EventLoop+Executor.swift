import Glibc
import Synchronization

// The loop as a task executor: request handlers prefer it (`Task(executorPreference:)`), so a
// request is parsed, handled and answered on one thread; only what a handler waits for (the
// database, scrypt) runs elsewhere, and its continuation comes back here through the inbox.
extension EventLoop: TaskExecutor {
    /// Whether the caller runs on this loop's thread.
    var isLoopThread: Bool { loopThread.load(ordering: .acquiring) == UInt(pthread_self()) }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if isLoopThread {
            runQueue.append(job)
            return
        }
        let closed = inbox.withLock { inbox in
            if inbox.closed { return true }
            inbox.jobs.append(job)
            return false
        }
        if closed {
            // The loop has ended (the server stopped): the task finishes on the global pool.
            // Enqueued there, not run here: this thread may be the database writer's.
            globalConcurrentExecutor.enqueue(ExecutorJob(job))
        } else {
            wakeIfSleeping()
        }
    }

    /// Runs queued jobs, at most a batch before the sockets get their turn again (a job may
    /// queue another), then delivers the responses they produced.
    func runJobs() {
        var ran = 0
        while !runQueue.isEmpty, ran < 4096 {
            let batch = runQueue
            runQueue.removeAll(keepingCapacity: true)
            for job in batch {
                job.runSynchronously(on: asUnownedTaskExecutor())
                ran += 1
            }
            deliverLocalOutbound()
        }
        deliverLocalOutbound()
    }

    func deliverLocalOutbound() {
        while !localOutbound.isEmpty {
            let items = localOutbound
            localOutbound.removeAll(keepingCapacity: true)
            for item in items { deliver(item) }
        }
    }

    /// The loop is ending: jobs still queued, and every later one, go to the global pool, so no
    /// task that preferred this loop is left suspended for ever. Responses that can no longer
    /// be written are dropped; a stream's channel is closed, so its producer ends.
    func handOverJobs() {
        let (pendingJobs, pendingOutbound) = inbox.withLock { inbox in
            inbox.closed = true
            defer { (inbox.jobs, inbox.outbound) = ([], []) }
            return (inbox.jobs, inbox.outbound)
        }
        loopThread.store(0, ordering: .releasing)
        let remaining = runQueue + pendingJobs
        let dropped = localOutbound + pendingOutbound
        runQueue = []
        localOutbound = []
        for item in dropped { item.connectionWentAway() }
        for job in remaining { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
    }
}
