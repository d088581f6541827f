//! Group commit: a writer task (one on SQLite, a few sharing the queue on PostgreSQL) takes
//! the writes waiting for it, runs them together in one transaction, commits once, and only
//! then answers each of them.
//!
//! The store ([`crate::store`]) sends its hot writes here — the claim of an idempotency key
//! and the record of an attempt with its idempotent answer, the two writes of every
//! submission — so that a burst of submissions costs one commit (one `fsync` on SQLite, one
//! WAL flush on PostgreSQL) per batch instead of one per write, and the writers no longer
//! queue for the database one at a time.
//!
//! What a [`Writer`] guarantees:
//!
//! - **Nothing is answered before its commit.** A job's outcome is sent to its caller only
//!   after the batch function returned for the whole batch, and the batch function returns
//!   `Ok` only after its transaction committed. So an answer the client sees was durable
//!   before it was sent, as with a transaction per request.
//! - **Each job keeps its own outcome.** The batch function answers one result per job; a job
//!   that failed on its own (a claim lost to a takeover, a statement refused) gets its result
//!   and the others commit (the store runs a batch set-based, and again one job at a time,
//!   each in a savepoint of its own, when a statement fails).
//! - **A failed batch fails every member.** When the batch as a whole fails (the transaction
//!   could not begin, the commit failed, the connection broke), every job in it gets that
//!   error, none was acknowledged, and the writer goes on with the next batch.
//! - **No caller hangs on a writer that is gone.** When the writer task has stopped (its
//!   runtime shut down, or it panicked), [`Writer::run`] answers
//!   `sqlx::Error::WorkerCrashed` at once, which the HTTP layer answers 503.
//! - **Batches take turns with the store's other writes.** The writer holds the `gate` it was
//!   started with from before it collects a batch until the batch committed: on SQLite that is
//!   the store's write turn (the gate `Store::writer` waits at), so the batch never competes with the other
//!   writers for SQLite's one write lock.
//! - **Bounded.** A batch holds at most `max_batch` jobs; the rest wait for the next batch.
//!   On PostgreSQL a few writer tasks share the queue (each batch is still one transaction),
//!   so that one batch gathers while others commit; on SQLite there is one.
//!
//! A job that was handed to the writer runs even if its caller stops waiting for the answer
//! (the submission route runs its work in a task of its own, so that never happens there).
//!
//! Rationale: a writer task with a queue, rather than a lock that callers take in turns, is
//! what lets a batch form: while one batch commits, the next one gathers in the queue.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot, Semaphore};

/// The most jobs one batch holds by default.
pub const DEFAULT_MAX_BATCH: usize = 256;

/// How many jobs may wait in the queue before callers wait to put theirs in.
const QUEUE_CAPACITY: usize = 4096;

/// What a batch function answers: one result per job, in the jobs' order, or one error for
/// the whole batch (nothing of it was committed).
pub type BatchResult<O> = Result<Vec<Result<O, sqlx::Error>>, sqlx::Error>;

/// A job waiting for the writer, with where its answer goes.
struct Waiting<J, O> {
    job: J,
    reply: oneshot::Sender<Result<O, sqlx::Error>>,
}

/// Counts of what a writer has done since it started.
#[derive(Debug, Default)]
struct Counters {
    batches: AtomicU64,
    jobs: AtomicU64,
    failed_batches: AtomicU64,
    largest_batch: AtomicU64,
    waiting: AtomicU64,
}

/// A snapshot of a writer's counts (exposed on `/metrics`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Batches run (committed or failed).
    pub batches: u64,
    /// Jobs run in those batches.
    pub jobs: u64,
    /// Batches that failed as a whole.
    pub failed_batches: u64,
    /// The most jobs one batch held.
    pub largest_batch: u64,
    /// Jobs handed to the writer and not yet taken into a batch.
    pub waiting: u64,
}

/// The handle of a writer task: cheap to clone; the task stops when every handle is gone.
pub struct Writer<J, O> {
    queue: mpsc::Sender<Waiting<J, O>>,
    counters: Arc<Counters>,
    gate: Arc<Semaphore>,
    /// How many writer tasks share the queue (and so the permits `hold` takes).
    writers: u32,
}

impl<J, O> Clone for Writer<J, O> {
    fn clone(&self) -> Self {
        Writer {
            queue: self.queue.clone(),
            counters: Arc::clone(&self.counters),
            gate: Arc::clone(&self.gate),
            writers: self.writers,
        }
    }
}

impl<J, O> std::fmt::Debug for Writer<J, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl<J: Send + 'static, O: Send + 'static> Writer<J, O> {
    /// Starts `writers` writer tasks on the current Tokio runtime, sharing one queue. `run`
    /// gets each batch (1 to `max_batch` jobs, in the order they arrived) and must run it in
    /// one transaction, answering `Ok` only once it committed (see the module's guarantees).
    /// A writer holds one of the `gate`'s permits while it collects and runs a batch; with one
    /// writer and a gate of one permit (SQLite) batches run one after the other, and with
    /// several (PostgreSQL) one batch gathers while others commit.
    pub fn start<R, F>(
        gate: Arc<Semaphore>,
        writers: usize,
        max_batch: usize,
        run: R,
    ) -> Writer<J, O>
    where
        R: Fn(Vec<J>) -> F + Send + Sync + 'static,
        F: Future<Output = BatchResult<O>> + Send,
    {
        let (queue, receiver) = mpsc::channel::<Waiting<J, O>>(QUEUE_CAPACITY);
        let receiver = Arc::new(tokio::sync::Mutex::new(receiver));
        let counters = Arc::new(Counters::default());
        let writers = writers.max(1);
        let writer = Writer {
            queue,
            counters: Arc::clone(&counters),
            gate: Arc::clone(&gate),
            writers: u32::try_from(writers).unwrap_or(u32::MAX),
        };
        let max_batch = max_batch.max(1);
        let run = Arc::new(run);
        for _ in 0..writers {
            let (receiver, gate, counters, run) = (
                Arc::clone(&receiver),
                Arc::clone(&gate),
                Arc::clone(&counters),
                Arc::clone(&run),
            );
            tokio::spawn(async move {
                // Ends when every handle is dropped and the queue is empty.
                loop {
                    let mut queue = receiver.lock().await;
                    let Some(first) = queue.recv().await else {
                        return;
                    };
                    // The gate is never closed, so `acquire` cannot fail; the turn is held
                    // until the batch has committed and been answered.
                    let _turn = gate.acquire().await.ok();
                    let mut batch = Vec::with_capacity(max_batch.min(64));
                    batch.push(first);
                    while batch.len() < max_batch {
                        match queue.try_recv() {
                            Ok(next) => batch.push(next),
                            Err(_) => break,
                        }
                    }
                    // The next writer may gather its batch while this one runs.
                    drop(queue);
                    let size = batch.len() as u64;
                    counters.waiting.fetch_sub(size, Ordering::Relaxed);
                    let (jobs, replies): (Vec<J>, Vec<_>) =
                        batch.into_iter().map(|w| (w.job, w.reply)).unzip();
                    let outcome = run(jobs).await;
                    counters.batches.fetch_add(1, Ordering::Relaxed);
                    counters.jobs.fetch_add(size, Ordering::Relaxed);
                    counters.largest_batch.fetch_max(size, Ordering::Relaxed);
                    answer(replies, outcome, &counters);
                }
            });
        }
        writer
    }

    /// Hands `job` to the writer and waits until the batch it joins has committed (or
    /// failed). Answers `sqlx::Error::WorkerCrashed` when the writer task is gone.
    pub async fn run(&self, job: J) -> Result<O, sqlx::Error> {
        let (reply, answer) = oneshot::channel();
        self.counters.waiting.fetch_add(1, Ordering::Relaxed);
        if self.queue.send(Waiting { job, reply }).await.is_err() {
            self.counters.waiting.fetch_sub(1, Ordering::Relaxed);
            tracing::error!("the group-commit writer has stopped; the write was not made");
            return Err(sqlx::Error::WorkerCrashed);
        }
        match answer.await {
            Ok(result) => result,
            // The writer dropped the job unanswered: it stopped (a panic, or its runtime
            // shut down) while the job waited or ran. Whether a running batch committed is
            // unknown, exactly as when a connection breaks during a commit.
            Err(_) => {
                tracing::error!("the group-commit writer stopped before answering a write");
                Err(sqlx::Error::WorkerCrashed)
            }
        }
    }
}

impl<J, O> Writer<J, O> {
    /// What the writer has done so far.
    pub fn stats(&self) -> Stats {
        let c = &self.counters;
        Stats {
            batches: c.batches.load(Ordering::Relaxed),
            jobs: c.jobs.load(Ordering::Relaxed),
            failed_batches: c.failed_batches.load(Ordering::Relaxed),
            largest_batch: c.largest_batch.load(Ordering::Relaxed),
            waiting: c.waiting.load(Ordering::Relaxed),
        }
    }

    /// Holds the writers' gate until the permit is dropped: the writers finish the batches
    /// they run and then wait, and the jobs sent meanwhile gather into one next batch (up to
    /// `max_batch`). Tests use it to make a batch of known members.
    pub async fn hold(&self) -> tokio::sync::OwnedSemaphorePermit {
        Arc::clone(&self.gate)
            .acquire_many_owned(self.writers)
            .await
            .expect("the writers' gate is never closed")
    }
}

/// Sends each member of a batch its outcome: its own result, or the batch's error.
fn answer<O>(
    replies: Vec<oneshot::Sender<Result<O, sqlx::Error>>>,
    outcome: BatchResult<O>,
    counters: &Counters,
) {
    match outcome {
        Ok(results) if results.len() == replies.len() => {
            for (reply, result) in replies.into_iter().zip(results) {
                // A caller that stopped waiting does not take its answer.
                let _ = reply.send(result);
            }
        }
        Ok(results) => {
            counters.failed_batches.fetch_add(1, Ordering::Relaxed);
            tracing::error!(
                jobs = replies.len(),
                results = results.len(),
                "a group commit answered a different number of results than it had jobs"
            );
            for reply in replies {
                let _ = reply.send(Err(sqlx::Error::Protocol(
                    "the group commit lost track of a write".into(),
                )));
            }
        }
        Err(e) => {
            counters.failed_batches.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(error = %e, jobs = replies.len(), "a group commit failed; every write in it gets the error");
            for reply in replies {
                let _ = reply.send(Err(replica(&e)));
            }
        }
    }
}

/// The same error again, for every member of a failed batch (`sqlx::Error` is not `Clone`).
/// It keeps what decides the answer: a connection error stays one (503 with `Retry-After`),
/// and a database error keeps its SQLSTATE code and message.
pub fn replica(e: &sqlx::Error) -> sqlx::Error {
    match e {
        sqlx::Error::PoolTimedOut => sqlx::Error::PoolTimedOut,
        sqlx::Error::PoolClosed => sqlx::Error::PoolClosed,
        sqlx::Error::WorkerCrashed => sqlx::Error::WorkerCrashed,
        sqlx::Error::Io(io) => sqlx::Error::Io(std::io::Error::new(io.kind(), io.to_string())),
        sqlx::Error::Protocol(text) => sqlx::Error::Protocol(text.clone()),
        sqlx::Error::Tls(tls) => sqlx::Error::Tls(tls.to_string().into()),
        sqlx::Error::Database(db) => sqlx::Error::Database(Box::new(BatchFailed {
            message: db.message().to_string(),
            code: db.code().map(|c| c.into_owned()),
            kind: db.kind(),
        })),
        other => sqlx::Error::Database(Box::new(BatchFailed {
            message: other.to_string(),
            code: None,
            kind: sqlx::error::ErrorKind::Other,
        })),
    }
}

/// A database error of a batch, as each of its members is told it.
#[derive(Debug)]
struct BatchFailed {
    message: String,
    code: Option<String>,
    kind: sqlx::error::ErrorKind,
}

impl std::fmt::Display for BatchFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the group commit failed: {}", self.message)
    }
}

impl std::error::Error for BatchFailed {}

impl sqlx::error::DatabaseError for BatchFailed {
    fn message(&self) -> &str {
        &self.message
    }

    fn code(&self) -> Option<std::borrow::Cow<'_, str>> {
        self.code.as_deref().map(std::borrow::Cow::Borrowed)
    }

    fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
        self
    }

    fn kind(&self) -> sqlx::error::ErrorKind {
        match self.kind {
            sqlx::error::ErrorKind::UniqueViolation => sqlx::error::ErrorKind::UniqueViolation,
            sqlx::error::ErrorKind::ForeignKeyViolation => {
                sqlx::error::ErrorKind::ForeignKeyViolation
            }
            sqlx::error::ErrorKind::NotNullViolation => sqlx::error::ErrorKind::NotNullViolation,
            sqlx::error::ErrorKind::CheckViolation => sqlx::error::ErrorKind::CheckViolation,
            _ => sqlx::error::ErrorKind::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch function that answers each job with its batch's size, or fails a batch that
    /// holds a zero.
    fn sizes() -> Writer<u32, usize> {
        Writer::start(
            Arc::new(Semaphore::new(1)),
            1,
            4,
            |jobs: Vec<u32>| async move {
                if jobs.contains(&0) {
                    return Err(sqlx::Error::Protocol("a zero".into()));
                }
                let n = jobs.len();
                Ok(jobs.iter().map(|_| Ok(n)).collect())
            },
        )
    }

    #[tokio::test]
    async fn jobs_sent_while_the_writer_is_held_form_one_batch_up_to_the_cap() {
        let writer = sizes();
        let held = writer.hold().await;
        let mut tasks = Vec::new();
        for job in 1..=6 {
            let writer = writer.clone();
            tasks.push(tokio::spawn(async move { writer.run(job).await }));
        }
        while writer.stats().waiting < 6 {
            tokio::task::yield_now().await;
        }
        drop(held);
        let mut sizes = Vec::new();
        for t in tasks {
            sizes.push(t.await.unwrap().unwrap());
        }
        sizes.sort_unstable();
        assert_eq!(sizes, [2, 2, 4, 4, 4, 4]);
        let stats = writer.stats();
        assert_eq!((stats.batches, stats.jobs, stats.largest_batch), (2, 6, 4));
    }

    #[tokio::test]
    async fn a_failed_batch_gives_every_member_the_error_and_the_writer_goes_on() {
        let writer = sizes();
        let held = writer.hold().await;
        let mut tasks = Vec::new();
        for job in [1, 0, 2] {
            let writer = writer.clone();
            tasks.push(tokio::spawn(async move { writer.run(job).await }));
        }
        while writer.stats().waiting < 3 {
            tokio::task::yield_now().await;
        }
        drop(held);
        for t in tasks {
            let e = t.await.unwrap().unwrap_err();
            assert!(
                matches!(e, sqlx::Error::Protocol(ref m) if m == "a zero"),
                "{e}"
            );
        }
        assert_eq!(writer.run(7).await.unwrap(), 1);
        assert_eq!(writer.stats().failed_batches, 1);
    }

    #[test]
    fn a_writer_whose_runtime_is_gone_answers_an_error_at_once() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let writer = runtime.block_on(async { sizes() });
        drop(runtime);
        let again = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let e = again.block_on(writer.run(1)).unwrap_err();
        assert!(matches!(e, sqlx::Error::WorkerCrashed), "{e}");
    }

    #[test]
    fn a_replica_keeps_what_decides_the_answer() {
        assert!(matches!(
            replica(&sqlx::Error::PoolClosed),
            sqlx::Error::PoolClosed
        ));
        let io = replica(&sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "reset",
        )));
        assert!(
            matches!(io, sqlx::Error::Io(ref e) if e.kind() == std::io::ErrorKind::ConnectionReset)
        );
        let db = replica(&sqlx::Error::Database(Box::new(BatchFailed {
            message: "shutting down".into(),
            code: Some("57P01".into()),
            kind: sqlx::error::ErrorKind::Other,
        })));
        let sqlx::Error::Database(db) = db else {
            panic!("a database error stays one")
        };
        assert_eq!(db.code().as_deref(), Some("57P01"));
        assert_eq!(db.message(), "shutting down");
    }
}
