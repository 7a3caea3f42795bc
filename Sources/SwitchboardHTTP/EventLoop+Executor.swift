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
            // The loop has ended (the server stopped): the task finishes on the global executor.
            job.runSynchronously(on: globalConcurrentExecutor.asUnownedTaskExecutor())
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

    private func deliverLocalOutbound() {
        while !localOutbound.isEmpty {
            let items = localOutbound
            localOutbound.removeAll(keepingCapacity: true)
            for item in items { deliver(item) }
        }
    }

    /// The loop is ending: jobs still queued, and every later one, run on the global executor,
    /// so no task that preferred this loop is left suspended for ever.
    func handOverJobs() {
        let pending = inbox.withLock { inbox in
            inbox.closed = true
            defer { inbox.jobs = [] }
            return inbox.jobs
        }
        loopThread.store(0, ordering: .releasing)
        let remaining = runQueue + pending
        runQueue = []
        localOutbound = []
        for job in remaining { job.runSynchronously(on: globalConcurrentExecutor.asUnownedTaskExecutor()) }
    }
}
