//! The hot writes through the group commit: claiming an idempotency key and recording an
//! attempt with its stored answer.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value as Json;
use sqlx::postgres::PgPool;
use sqlx::sqlite::SqlitePool;
use sqlx::types::Json as SqlJson;
use tokio::sync::Semaphore;

use crate::group_commit;
use crate::store::errors::{unknown_stored, StoreResult};

// Group commit of the hot writes.
//
// The two writes every submission makes — claiming its idempotency key and recording its
// attempt with the stored answer — go through one writer task per store
// (`crate::group_commit`), which runs the writes waiting at the same moment in one transaction.
// Here is what a batch does in that transaction; the module says what the writer guarantees.

/// The group-commit writer of a store's hot writes (`crate::group_commit`), started with the
/// store. The writer task holds only the pool ([`HotDb`]), never the store, so it stops when
/// the last handle of its store is dropped.
#[derive(Clone, Debug)]
pub struct HotWrites(pub(crate) group_commit::Writer<HotWrite, Written>);

/// How many batches run at once on PostgreSQL: each on a connection of its own (of the pool's
/// ten), so that one batch gathers while others wait for their commit. SQLite has one writer.
pub(crate) const POSTGRES_WRITERS: usize = 3;

impl HotWrites {
    /// One writer on SQLite, holding the store's write gate for each batch; a few on
    /// PostgreSQL, with a gate of their own.
    pub(crate) fn start(db: HotDb, sqlite_gate: Option<Arc<Semaphore>>) -> HotWrites {
        let (gate, writers) = match sqlite_gate {
            Some(gate) => (gate, 1),
            None => (Arc::new(Semaphore::new(POSTGRES_WRITERS)), POSTGRES_WRITERS),
        };
        HotWrites(group_commit::Writer::start(
            gate,
            writers,
            group_commit::DEFAULT_MAX_BATCH,
            move |jobs| write_batch(db.clone(), jobs),
        ))
    }
}

/// How many rows a statement changed, on either backend.
pub(crate) trait RowsAffected {
    fn rows_affected(&self) -> u64;
}

impl RowsAffected for sqlx::sqlite::SqliteQueryResult {
    fn rows_affected(&self) -> u64 {
        self.rows_affected()
    }
}

impl RowsAffected for sqlx::postgres::PgQueryResult {
    fn rows_affected(&self) -> u64 {
        self.rows_affected()
    }
}

/// The pool a group commit writes to.
#[derive(Clone)]
pub(crate) enum HotDb {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// One hot write, owned so that it can wait in the writer's queue.
#[derive(Debug)]
pub enum HotWrite {
    /// [`Store::claim_idempotency_key_as`].
    Claim {
        owner: String,
        caller: String,
        key: String,
        fingerprint: String,
        lease: Duration,
    },
    /// [`Store::record`].
    Record {
        attempt: Option<NewAttempt>,
        answer: Option<StoredAnswer>,
    },
    /// [`Store::record_once`]: the claim of `answer`'s key and its record in one write.
    Once {
        fingerprint: String,
        lease: Duration,
        attempt: Option<NewAttempt>,
        answer: StoredAnswer,
    },
}

impl HotWrite {
    /// The idempotency record the write locks, if any. A batch runs its writes in this order,
    /// so that on PostgreSQL two servers' batches lock the records they share in the same
    /// order and cannot deadlock on them.
    fn record_locked(&self) -> Option<(&str, &str)> {
        match self {
            HotWrite::Claim { caller, key, .. } => Some((caller, key)),
            HotWrite::Record { answer, .. } => answer.as_ref().map(|a| (&*a.caller, &*a.key)),
            HotWrite::Once { answer, .. } => Some((&answer.caller, &answer.key)),
        }
    }
}

/// An [`Attempt`] to insert, its design already JSON text and its verdict's text compressed
/// (`super::stored_verdict`): the request makes them, so the writer only sends them on.
#[derive(Debug)]
pub struct NewAttempt {
    pub(crate) id: String,
    pub(crate) student: String,
    pub(crate) scenario: String,
    pub(crate) scenario_hash: String,
    pub(crate) design: Box<serde_json::value::RawValue>,
    pub(crate) verdict: Arc<[u8]>,
    pub(crate) score: i32,
    pub(crate) max_score: i32,
    pub(crate) passed: bool,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) class: Option<String>,
}

/// [`IdempotentAnswer`], owned, its body already JSON text.
#[derive(Debug)]
pub struct StoredAnswer {
    pub(crate) caller: String,
    pub(crate) key: String,
    pub(crate) owner: String,
    pub(crate) status: u16,
    pub(crate) response: String,
}

/// The outcome of a hot write.
#[derive(Debug)]
pub enum Written {
    Claimed(Claim),
    Recorded(bool),
}

/// What a write did inside its savepoint: keep it, or undo it (it changed nothing that
/// should stay) — with its outcome either way.
pub(crate) enum Step {
    Keep(Written),
    Undo(Written),
}

/// A writer that answered the other kind of write (never happens; an error, not a panic).
pub(crate) fn mismatched_answer() -> sqlx::Error {
    sqlx::Error::Protocol("the group commit answered a write with another write's outcome".into())
}

/// How a batch's set-based run ended when it did not commit.
pub(crate) enum Bulk {
    /// A statement failed: which write caused it is unknown, so the batch runs again write by
    /// write (nothing of the first run stays: its transaction was rolled back).
    Statement(sqlx::Error),
    /// The transaction itself failed (begin, commit, the connection): the batch's error.
    Transaction(sqlx::Error),
}

/// Runs a batch of hot writes in one transaction and commits it; answers `Ok` only once it
/// committed, and any failure of the transaction itself (begin, commit, the connection) is the
/// whole batch's error, with nothing of it committed.
///
/// First the batch runs set-based, a few statements for all its writes (see [`HotSql::bulk`]),
/// which is what makes a batch cheap. A write that changes nothing — a record whose claim was
/// taken over, a claim of a key that exists — gets its own outcome there. When a statement
/// fails, the transaction is rolled back and the batch runs again one write at a time, each in
/// a savepoint of its own ([`HotSql::one_by_one`]): a write that fails is rolled back to its
/// savepoint alone and answered its error, while the others commit.
pub(crate) async fn write_batch(
    db: HotDb,
    jobs: Vec<HotWrite>,
) -> group_commit::BatchResult<Written> {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| jobs[i].record_locked());
    let bulk = match &db {
        HotDb::Sqlite(pool) => HotSql::bulk(pool, &jobs, &order).await,
        HotDb::Postgres(pool) => HotSql::bulk(pool, &jobs, &order).await,
    };
    match bulk {
        Ok(results) => return Ok(results),
        Err(Bulk::Transaction(e)) => return Err(e),
        Err(Bulk::Statement(e)) => {
            tracing::debug!(error = %e, jobs = jobs.len(), "a group commit runs again write by write");
        }
    }
    match &db {
        HotDb::Sqlite(pool) => HotSql::one_by_one(pool, &jobs, &order).await,
        HotDb::Postgres(pool) => HotSql::one_by_one(pool, &jobs, &order).await,
    }
}

/// The rows of a multi-row `VALUES`: `rows` rows of `width` placeholders each, numbered from
/// `first`; `row(n)` writes one row from its first placeholder's number.
pub(crate) fn values_list(
    rows: usize,
    first: usize,
    width: usize,
    row: impl Fn(usize) -> String,
) -> String {
    (0..rows)
        .map(|r| row(first + r * width))
        .collect::<Vec<_>>()
        .join(", ")
}

/// True when the `$N` placeholders of `sql` are `$1, $2, $3…` in the order they appear, each
/// once: then they can be written as plain `?`, which SQLite numbers by their place.
fn placeholders_in_order(sql: &str) -> bool {
    let mut next = 1;
    let mut rest = sql;
    while let Some(at) = rest.find('$') {
        rest = &rest[at + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if rest[..digits].parse::<usize>().ok() != Some(next) {
            return false;
        }
        next += 1;
        rest = &rest[digits..];
    }
    true
}

/// The hot writes' SQL, written once for both backends: the functions of this block are
/// generic over the database, and its `where` clause says what they bind and read.
struct HotSql<DB>(std::marker::PhantomData<DB>);

impl<DB> HotSql<DB>
where
    DB: sqlx::Database + sqlx::database::HasStatementCache,
    DB::QueryResult: RowsAffected,
    for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: sqlx::IntoArguments<'q, DB>,
    for<'q> String: sqlx::Encode<'q, DB> + sqlx::Decode<'q, DB> + sqlx::Type<DB>,
    for<'q> &'q str: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    for<'q> DateTime<Utc>: sqlx::Encode<'q, DB> + sqlx::Decode<'q, DB> + sqlx::Type<DB>,
    for<'q> i32: sqlx::Encode<'q, DB> + sqlx::Decode<'q, DB> + sqlx::Type<DB>,
    for<'q> bool: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    for<'q> &'q [u8]: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    for<'q> SqlJson<&'q Box<serde_json::value::RawValue>>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    for<'q> Option<&'q str>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    for<'r> (String, String): sqlx::FromRow<'r, DB::Row>,
    for<'r> (String, String, String): sqlx::FromRow<'r, DB::Row>,
    for<'r> StoredKey: sqlx::FromRow<'r, DB::Row>,
{
    /// `sql` with its `$N` placeholders written for SQLite, which reads them the same way:
    /// plain `?` when they come in order, each once (`$1, $2, $3…`), else `?N`. SQLite looks a
    /// `$N` up by name among the statement's placeholders seen so far, one by one, which makes
    /// a multi-row `VALUES` of a few hundred placeholders cost more to prepare than to run; a
    /// `?N` is read as its number. Binding then asks each placeholder's name, which SQLite
    /// finds by walking the list of named ones, again a time growing with the square of their
    /// number; a plain `?` has no name, and is bound by its place.
    fn numbered(sql: String) -> String {
        if DB::NAME != "SQLite" {
            return sql;
        }
        if placeholders_in_order(&sql) {
            let mut plain = String::with_capacity(sql.len());
            let mut chars = sql.chars().peekable();
            while let Some(c) = chars.next() {
                if c == '$' {
                    plain.push('?');
                    while chars.next_if(char::is_ascii_digit).is_some() {}
                } else {
                    plain.push(c);
                }
            }
            plain
        } else {
            sql.replace('$', "?")
        }
    }

    /// The set-based run of a batch, on either backend: the SQL is the same text for both.
    ///
    /// In one transaction: one `INSERT … ON CONFLICT DO NOTHING RETURNING` for every claim (a
    /// claim whose row went in is `Started`; any other is decided on its own, as
    /// [`Store::claim_idempotency_key_as`] always did: replay, mismatch, in flight or takeover);
    /// one `INSERT` of the keys of the writes that claim and record at once, already answered
    /// ([`HotSql::once_all`]); one `UPDATE … FROM (VALUES …) RETURNING` that stores the answers of the records whose
    /// holders still hold their claims; then the students and the attempts of those records, one
    /// `INSERT` each. A record whose claim was taken over writes nothing and is answered `false`.
    async fn bulk(
        pool: &sqlx::Pool<DB>,
        jobs: &[HotWrite],
        order: &[usize],
    ) -> Result<Vec<StoreResult<Written>>, Bulk> {
        let mut tx = pool.begin().await.map_err(Bulk::Transaction)?;
        let run = async {
            let now = Utc::now();
            let mut results: Vec<Option<StoreResult<Written>>> =
                jobs.iter().map(|_| None).collect();
            let of_kind = |kind: fn(&HotWrite) -> bool| -> Vec<usize> {
                order.iter().copied().filter(|&i| kind(&jobs[i])).collect()
            };
            let claims = of_kind(|j| matches!(j, HotWrite::Claim { .. }));
            Self::claim_all(&mut tx, jobs, &claims, now, &mut results).await?;
            let mut attempts: Vec<&NewAttempt> = Vec::new();
            let once = of_kind(|j| matches!(j, HotWrite::Once { .. }));
            Self::once_all(&mut tx, jobs, &once, now, &mut results, &mut attempts).await?;
            // Records: first the answers, which say whose claims still hold.
            let records = of_kind(|j| matches!(j, HotWrite::Record { .. }));
            let held = Self::answer_all(&mut tx, jobs, &records, now).await?;
            for &i in &records {
                let HotWrite::Record { attempt, answer } = &jobs[i] else {
                    continue;
                };
                let holds = answer
                    .as_ref()
                    .is_none_or(|a| held.contains(&(a.caller.clone(), a.key.clone())));
                if holds {
                    attempts.extend(attempt.as_ref());
                }
                results[i] = Some(Ok(Written::Recorded(holds)));
            }
            Self::insert_attempts(&mut tx, &attempts, now).await?;
            Ok::<_, sqlx::Error>(results)
        };
        let began = std::time::Instant::now();
        let results = match run.await {
            Ok(results) => results,
            Err(e) => {
                tx.rollback().await.map_err(Bulk::Transaction)?;
                return Err(Bulk::Statement(e));
            }
        };
        let written = began.elapsed();
        tx.commit().await.map_err(Bulk::Transaction)?;
        tracing::debug!(
            jobs = jobs.len(),
            statements_us = written.as_micros() as u64,
            commit_us = (began.elapsed() - written).as_micros() as u64,
            "a group commit committed"
        );
        Ok(results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(mismatched_answer())))
            .collect())
    }

    /// The claims of a batch, set-based: one `INSERT … ON CONFLICT DO NOTHING RETURNING` for them
    /// all; a claim whose row went in is `Started`, any other is decided on its own.
    async fn claim_all(
        conn: &mut DB::Connection,
        jobs: &[HotWrite],
        claims: &[usize],
        now: DateTime<Utc>,
        results: &mut [Option<StoreResult<Written>>],
    ) -> Result<(), sqlx::Error> {
        if !claims.is_empty() {
            let sql = Self::numbered(format!(
                "INSERT INTO idempotency_keys (caller, key, fingerprint, state, created_at, updated_at, owner) VALUES {} \
                 ON CONFLICT (caller, key) DO NOTHING RETURNING caller, key, owner",
                values_list(claims.len(), 1, 5, |n| format!("(${n}, ${}, ${}, 'in_flight', ${}, ${}, ${})", n + 1, n + 2, n + 3, n + 3, n + 4))));
            let mut query = sqlx::query_as::<_, (String, String, String)>(&sql).persistent(false);
            for &i in claims {
                if let HotWrite::Claim {
                    owner,
                    caller,
                    key,
                    fingerprint,
                    ..
                } = &jobs[i]
                {
                    query = query
                        .bind(caller)
                        .bind(key)
                        .bind(fingerprint)
                        .bind(now)
                        .bind(owner);
                }
            }
            let inserted: std::collections::HashSet<(String, String, String)> =
                query.fetch_all(&mut *conn).await?.into_iter().collect();
            for &i in claims {
                let HotWrite::Claim {
                    owner, caller, key, ..
                } = &jobs[i]
                else {
                    continue;
                };
                if inserted.contains(&(caller.clone(), key.clone(), owner.clone())) {
                    results[i] = Some(Ok(Written::Claimed(Claim::Started)));
                } else {
                    // The key was there already: decided on its own, as always.
                    match Self::write_one(&mut *conn, &jobs[i]).await? {
                        Step::Keep(written) | Step::Undo(written) => results[i] = Some(Ok(written)),
                    }
                }
            }
        }
        Ok(())
    }

    /// The claims-with-records of a batch ([`HotWrite::Once`]), set-based: one `INSERT … ON
    /// CONFLICT DO NOTHING RETURNING` of their keys already answered; the attempt of each whose
    /// row went in joins `attempts`, and it is `Started`. Any other found its key there and is
    /// decided on its own ([`HotSql::write_one`]): a replay, a mismatch, in flight, or a takeover
    /// that records it.
    async fn once_all<'j>(
        conn: &mut DB::Connection,
        jobs: &'j [HotWrite],
        once: &[usize],
        now: DateTime<Utc>,
        results: &mut [Option<StoreResult<Written>>],
        attempts: &mut Vec<&'j NewAttempt>,
    ) -> Result<(), sqlx::Error> {
        if once.is_empty() {
            return Ok(());
        }
        let sql = Self::numbered(format!(
            "INSERT INTO idempotency_keys (caller, key, fingerprint, state, status_code, response, created_at, updated_at, owner) VALUES {} \
             ON CONFLICT (caller, key) DO NOTHING RETURNING caller, key, owner",
            values_list(once.len(), 1, 8, |n| format!("(${n}, ${}, ${}, 'done', ${}, ${}, ${}, ${}, ${})", n + 1, n + 2, n + 3, n + 4, n + 5, n + 6, n + 7))));
        // Every placeholder once, in order (the time too, row by row): see `numbered`.
        let mut query = sqlx::query_as::<_, (String, String, String)>(&sql).persistent(false);
        for &i in once {
            if let HotWrite::Once {
                fingerprint,
                answer,
                ..
            } = &jobs[i]
            {
                query = query
                    .bind(&answer.caller)
                    .bind(&answer.key)
                    .bind(fingerprint)
                    .bind(i32::from(answer.status))
                    .bind(&answer.response)
                    .bind(now)
                    .bind(now)
                    .bind(&answer.owner);
            }
        }
        let inserted: std::collections::HashSet<(String, String, String)> =
            query.fetch_all(&mut *conn).await?.into_iter().collect();
        for &i in once {
            let HotWrite::Once {
                attempt, answer, ..
            } = &jobs[i]
            else {
                continue;
            };
            let row = (
                answer.caller.clone(),
                answer.key.clone(),
                answer.owner.clone(),
            );
            if inserted.contains(&row) {
                attempts.extend(attempt.as_ref());
                results[i] = Some(Ok(Written::Claimed(Claim::Started)));
            } else {
                match Self::write_one(&mut *conn, &jobs[i]).await? {
                    Step::Keep(written) | Step::Undo(written) => results[i] = Some(Ok(written)),
                }
            }
        }
        Ok(())
    }

    /// The answers of a batch's records, set-based: one `UPDATE … FROM (VALUES …) RETURNING` that
    /// stores those whose holders still hold their claims; the (caller, key) of each it stored.
    async fn answer_all(
        conn: &mut DB::Connection,
        jobs: &[HotWrite],
        records: &[usize],
        now: DateTime<Utc>,
    ) -> Result<std::collections::HashSet<(String, String)>, sqlx::Error> {
        let answered: Vec<(usize, &StoredAnswer)> = records
            .iter()
            .filter_map(|&i| match &jobs[i] {
                HotWrite::Record {
                    answer: Some(a), ..
                } => Some((i, a)),
                _ => None,
            })
            .collect();
        let mut held: std::collections::HashSet<(String, String)> =
            std::collections::HashSet::new();
        if !answered.is_empty() {
            let sql = Self::numbered(format!(
                "UPDATE idempotency_keys SET state = 'done', status_code = v.column4, response = v.column5, updated_at = $1 \
                 FROM (VALUES {}) AS v \
                 WHERE idempotency_keys.caller = v.column1 AND idempotency_keys.key = v.column2 \
                 AND idempotency_keys.owner = v.column3 AND idempotency_keys.state = 'in_flight' \
                 RETURNING caller, key",
                values_list(answered.len(), 2, 5, |n| format!("(${n}, ${}, ${}, ${}, ${})", n + 1, n + 2, n + 3, n + 4))));
            let mut query = sqlx::query_as::<_, (String, String)>(&sql)
                .persistent(false)
                .bind(now);
            for (_, a) in &answered {
                query = query
                    .bind(&a.caller)
                    .bind(&a.key)
                    .bind(&a.owner)
                    .bind(i32::from(a.status))
                    .bind(&a.response);
            }
            held.extend(query.fetch_all(&mut *conn).await?);
        }
        Ok(held)
    }

    /// The students and the attempts of a batch's records that hold, one `INSERT` each.
    async fn insert_attempts(
        conn: &mut DB::Connection,
        attempts: &[&NewAttempt],
        now: DateTime<Utc>,
    ) -> Result<(), sqlx::Error> {
        if !attempts.is_empty() {
            let sql = Self::numbered(format!(
                "INSERT INTO students (id, display_name, origin, created_at) VALUES {} ON CONFLICT (id) DO NOTHING",
                values_list(attempts.len(), 2, 1, |n| format!("(${n}, NULL, 'grader', $1)"))));
            let mut query = sqlx::query(&sql).persistent(false).bind(now);
            for a in attempts {
                query = query.bind(&a.student);
            }
            query.execute(&mut *conn).await?;
            let sql = Self::numbered(format!(
                "INSERT INTO attempts (id, student, scenario, scenario_hash, design, verdict, verdict_deflate, score, max_score, passed, created_at, class_id) VALUES {}",
                values_list(attempts.len(), 1, 11, |n| format!(
                    "(${n}, ${}, ${}, ${}, ${}, 'null', ${}, ${}, ${}, ${}, ${}, ${})",
                    n + 1, n + 2, n + 3, n + 4, n + 5, n + 6, n + 7, n + 8, n + 9, n + 10))));
            let mut query = sqlx::query(&sql).persistent(false);
            for a in attempts {
                query = query
                    .bind(&a.id)
                    .bind(&a.student)
                    .bind(&a.scenario)
                    .bind(&a.scenario_hash)
                    .bind(SqlJson(&a.design))
                    .bind(&*a.verdict)
                    .bind(a.score)
                    .bind(a.max_score)
                    .bind(a.passed)
                    .bind(a.created_at)
                    .bind(a.class.as_deref());
            }
            query.execute(&mut *conn).await?;
        }
        Ok(())
    }

    /// The run of a batch one write at a time, each write in a savepoint of its own (see
    /// [`write_batch`]).
    async fn one_by_one(
        pool: &sqlx::Pool<DB>,
        jobs: &[HotWrite],
        order: &[usize],
    ) -> group_commit::BatchResult<Written> {
        let mut results: Vec<Option<StoreResult<Written>>> = jobs.iter().map(|_| None).collect();
        let mut tx = pool.begin().await?;
        for &i in order {
            let mut savepoint = sqlx::Connection::begin(&mut *tx).await?;
            let result = match Self::write_one(&mut savepoint, &jobs[i]).await {
                Ok(Step::Keep(written)) => {
                    savepoint.commit().await?;
                    Ok(written)
                }
                Ok(Step::Undo(written)) => {
                    savepoint.rollback().await?;
                    Ok(written)
                }
                Err(e) => {
                    savepoint.rollback().await?;
                    Err(e)
                }
            };
            results[i] = Some(result);
        }
        tx.commit().await?;
        Ok(results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(mismatched_answer())))
            .collect())
    }

    /// Makes one hot write on a connection of either backend: the SQL is the same text for both.
    async fn write_one(conn: &mut DB::Connection, job: &HotWrite) -> StoreResult<Step> {
        match job {
            HotWrite::Claim {
                owner,
                caller,
                key,
                fingerprint,
                lease,
            } => {
                let claim = ClaimId::held_by(caller, key, owner);
                Self::claim_one(conn, &claim, fingerprint, *lease).await
            }
            HotWrite::Record { attempt, answer } => {
                Self::record_one(conn, attempt.as_ref(), answer.as_ref()).await
            }
            HotWrite::Once {
                fingerprint,
                lease,
                attempt,
                answer,
            } => {
                let claim = ClaimId::held_by(&answer.caller, &answer.key, &answer.owner);
                match Self::claim_one(conn, &claim, fingerprint, *lease).await? {
                    Step::Keep(Written::Claimed(Claim::Started)) => {}
                    other => return Ok(other),
                }
                // Claimed in this transaction, so the record holds it.
                match Self::record_one(conn, attempt.as_ref(), Some(answer)).await? {
                    Step::Keep(Written::Recorded(true)) => {
                        Ok(Step::Keep(Written::Claimed(Claim::Started)))
                    }
                    _ => Err(mismatched_answer()),
                }
            }
        }
    }

    /// Claims one key on its own: a new key is `Started`; an existing one is a replay, a
    /// mismatch, in flight, or taken over when its holder stopped renewing it.
    async fn claim_one(
        conn: &mut DB::Connection,
        claim: &ClaimId,
        fingerprint: &str,
        lease: Duration,
    ) -> StoreResult<Step> {
        let (caller, key, owner) = (&claim.caller, &claim.key, &claim.owner);
        // Bounded: a claim can only disappear between the insert and the read
        // when its holder abandoned it, which each retry observes.
        for _ in 0..4 {
            let now = Utc::now();
            let inserted = sqlx::query(
                "INSERT INTO idempotency_keys (caller, key, fingerprint, state, created_at, updated_at, owner) \
                 VALUES ($1, $2, $3, 'in_flight', $4, $4, $5) ON CONFLICT (caller, key) DO NOTHING")
                .bind(caller).bind(key).bind(fingerprint).bind(now).bind(owner)
                .execute(&mut *conn).await?.rows_affected();
            if inserted == 1 {
                return Ok(Step::Keep(Written::Claimed(Claim::Started)));
            }
            let stored = sqlx::query_as::<_, StoredKey>("SELECT fingerprint, state, status_code, response, updated_at FROM idempotency_keys WHERE caller = $1 AND key = $2")
                .bind(caller).bind(key).fetch_optional(&mut *conn).await?;
            let Some(stored) = stored else {
                continue;
            };
            if stored.fingerprint != fingerprint {
                return Ok(Step::Keep(Written::Claimed(Claim::Mismatch)));
            }
            if let Some(replay) = stored.replay()? {
                return Ok(Step::Keep(Written::Claimed(replay)));
            }
            let age = now
                .signed_duration_since(stored.renewed_at)
                .to_std()
                .unwrap_or_default();
            if age < lease {
                return Ok(Step::Keep(Written::Claimed(Claim::InFlight)));
            }
            let taken = sqlx::query(
                "UPDATE idempotency_keys SET fingerprint = $4, updated_at = $5, owner = $6 \
                 WHERE caller = $1 AND key = $2 AND state = 'in_flight' AND updated_at = $3",
            )
            .bind(caller)
            .bind(key)
            .bind(stored.renewed_at)
            .bind(fingerprint)
            .bind(now)
            .bind(owner)
            .execute(&mut *conn)
            .await?
            .rows_affected();
            if taken == 1 {
                tracing::warn!(
                    caller = caller.as_str(),
                    key = key.as_str(),
                    "took over an idempotency key whose holder stopped renewing it"
                );
                return Ok(Step::Keep(Written::Claimed(Claim::Started)));
            }
        }
        Ok(Step::Keep(Written::Claimed(Claim::InFlight)))
    }

    /// Records one attempt with its answer: the answer only while its claim is still held (else
    /// nothing, undone), then the student and the attempt.
    async fn record_one(
        conn: &mut DB::Connection,
        attempt: Option<&NewAttempt>,
        answer: Option<&StoredAnswer>,
    ) -> StoreResult<Step> {
        let now = Utc::now();
        if let Some(ans) = answer {
            let held = sqlx::query(
                "UPDATE idempotency_keys SET state = 'done', status_code = $3, response = $4, updated_at = $5 \
                 WHERE caller = $1 AND key = $2 AND owner = $6 AND state = 'in_flight'")
                .bind(&ans.caller).bind(&ans.key).bind(i32::from(ans.status)).bind(&ans.response).bind(now).bind(&ans.owner)
                .execute(&mut *conn).await?.rows_affected();
            if held != 1 {
                return Ok(Step::Undo(Written::Recorded(false)));
            }
        }
        if let Some(a) = attempt {
            sqlx::query("INSERT INTO students (id, display_name, origin, created_at) VALUES ($1, NULL, 'grader', $2) ON CONFLICT (id) DO NOTHING")
                .bind(&a.student).bind(now).execute(&mut *conn).await?;
            sqlx::query(
                "INSERT INTO attempts (id, student, scenario, scenario_hash, design, verdict, verdict_deflate, score, max_score, passed, created_at, class_id) \
                 VALUES ($1, $2, $3, $4, $5, 'null', $6, $7, $8, $9, $10, $11)")
                .bind(&a.id).bind(&a.student).bind(&a.scenario).bind(&a.scenario_hash)
                .bind(SqlJson(&a.design)).bind(&*a.verdict)
                .bind(a.score).bind(a.max_score).bind(a.passed).bind(a.created_at).bind(a.class.as_deref())
                .execute(&mut *conn).await?;
        }
        Ok(Step::Keep(Written::Recorded(true)))
    }
}

/// One claim on an idempotency key: the caller it is scoped to, the key, and the name of the
/// claim's holder. Renewing, recording and abandoning a claim name all three, so a holder
/// whose claim was taken over (a takeover gives the claim a new holder) can no longer write
/// to it. [`crate::idempotency::KeyClaim`] holds one for a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimId {
    pub caller: String,
    pub key: String,
    pub owner: String,
}

impl ClaimId {
    /// A claim of `key` for `caller` by a new holder (128 random bits in hex).
    pub fn new(caller: &str, key: &str) -> ClaimId {
        ClaimId::held_by(caller, key, &uuid::Uuid::new_v4().simple().to_string())
    }

    /// The claim of `key` for `caller` by the holder named `owner`.
    pub fn held_by(caller: &str, key: &str, owner: &str) -> ClaimId {
        ClaimId {
            caller: caller.to_string(),
            key: key.to_string(),
            owner: owner.to_string(),
        }
    }
}

/// The outcome of claiming an idempotency key.
#[derive(Clone, Debug, PartialEq)]
pub enum Claim {
    /// The key is new (or its first holder was abandoned): this request runs.
    Started,
    /// The key was used with the same request, which finished: answer what it answered.
    Replay { status: u16, body: Json },
    /// The key was used with another request.
    Mismatch,
    /// The first request with this key is still running.
    InFlight,
}

/// An idempotency record as read back.
#[derive(sqlx::FromRow)]
pub(crate) struct StoredKey {
    pub(crate) fingerprint: String,
    pub(crate) state: String,
    #[sqlx(rename = "status_code")]
    pub(crate) status: Option<i32>,
    pub(crate) response: Option<String>,
    #[sqlx(rename = "updated_at")]
    pub(crate) renewed_at: DateTime<Utc>,
}

impl StoredKey {
    /// The answer to replay when the key's request finished, `None` while it is in flight.
    /// A state, status or answer the server cannot have written is refused, never replayed
    /// as a default.
    pub(crate) fn replay(&self) -> StoreResult<Option<Claim>> {
        match self.state.as_str() {
            "in_flight" => return Ok(None),
            "done" => {}
            other => {
                return Err(unknown_stored(format!(
                    "an idempotency key's state {other:?}"
                )))
            }
        }
        let status = self
            .status
            .and_then(|s| u16::try_from(s).ok())
            .filter(|s| axum::http::StatusCode::from_u16(*s).is_ok())
            .ok_or_else(|| {
                unknown_stored(format!(
                    "a finished idempotency key's status {:?}",
                    self.status
                ))
            })?;
        let text = self
            .response
            .as_deref()
            .ok_or_else(|| unknown_stored("a finished idempotency key without its answer"))?;
        let body = serde_json::from_str(text).map_err(|e| {
            unknown_stored(format!(
                "a finished idempotency key's answer that is not JSON ({e})"
            ))
        })?;
        Ok(Some(Claim::Replay { status, body }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_in_order_become_plain_on_sqlite_and_stay_on_postgres() {
        let rows = values_list(2, 1, 3, |n| format!("(${n}, ${}, ${})", n + 1, n + 2));
        let sql = format!("INSERT INTO t (a, b, c) VALUES {rows}");
        assert_eq!(
            HotSql::<sqlx::Sqlite>::numbered(sql.clone()),
            "INSERT INTO t (a, b, c) VALUES (?, ?, ?), (?, ?, ?)"
        );
        assert_eq!(HotSql::<sqlx::Postgres>::numbered(sql.clone()), sql);
    }

    #[test]
    fn placeholders_out_of_order_or_used_twice_keep_their_numbers() {
        for sql in [
            "UPDATE t SET a = $2 WHERE b = $1",
            "INSERT INTO t VALUES ($1, $2, $1)",
            "INSERT INTO t VALUES ($1, $3)",
            "UPDATE t SET a = $10 WHERE b = $1",
        ] {
            assert!(!placeholders_in_order(sql), "{sql}");
            assert_eq!(
                HotSql::<sqlx::Sqlite>::numbered(sql.to_string()),
                sql.replace('$', "?")
            );
        }
        assert!(placeholders_in_order("SELECT 1"));
        assert!(placeholders_in_order(
            "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
        ));
    }
}
