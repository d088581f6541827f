//! `pipeline-builder`: serve the app and the API, validate scenario files, check a design
//! offline, and manage grader tokens.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use server::config::{self, Config};
use server::watch::LiveCatalogue;
use server::{catalogue, report, AppState, Store};

#[derive(Parser)]
#[command(
    name = "pipeline-builder",
    version,
    about = "Pipeline Builder: the practice canvas of the idempotency chapter"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the web app and the REST API.
    Serve(ServeArgs),
    /// Work with scenario files.
    #[command(subcommand)]
    Scenarios(ScenariosCommand),
    /// Check a design offline and print its verdict (exit 0 passed, 1 missed, 2 bad input).
    Check(CheckArgs),
    /// Manage grader tokens: a server administrator's, or one that acts for a staff account.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Staff accounts and their roles in classes.
    #[command(subcommand)]
    Staff(server::staff_cli::StaffCommand),
    /// Put a running server under load and print what it held (a table, then a JSON line).
    Load(LoadArgs),
    /// Remove expired idempotency records and sessions with no work, once, and print how
    /// many (a running server does this by itself every --sweep-period-seconds).
    Sweep(SweepArgs),
    /// Grade one Gradescope submission offline and write its results.json (exit 0 whenever
    /// a result was written: a design that fails or is invalid is a grade, not an error).
    Autograde(AutogradeArgs),
    /// Copy a SQLite database to FILE while the server runs (one consistent snapshot; an
    /// existing FILE is never overwritten). On PostgreSQL, print the pg_dump line and exit 1.
    Backup(BackupArgs),
    /// Manage students.
    #[command(subcommand)]
    Student(StudentCommand),
    /// LTI 1.3: the learning platforms that launch this tool, and its signing key.
    #[command(subcommand)]
    Lti(server::lti::cli::LtiCommand),
    /// Check again the stored attempts at a scenario made against an older version of its
    /// file, record the new verdicts beside the old, print progress and how many results
    /// changed per requirement. Resumable: a second run regrades only what is left.
    Regrade(RegradeArgs),
}

#[derive(Args)]
struct RegradeArgs {
    /// The scenario whose attempts to regrade.
    #[arg(long)]
    scenario: String,
    /// Only the attempts made for this class.
    #[arg(long)]
    class: Option<String>,
    /// The folder of scenario files: the current versions.
    #[arg(long, env = "SCENARIOS_DIR", default_value = "scenarios")]
    scenarios: PathBuf,
    #[command(flatten)]
    database: DatabaseArg,
}

#[derive(Args)]
struct BackupArgs {
    /// Where to write the copy; it must not exist.
    file: PathBuf,
    #[command(flatten)]
    database: DatabaseArg,
}

#[derive(Subcommand)]
enum StudentCommand {
    /// Delete a student with their attempts, drafts and memberships, in one transaction, and
    /// print how many of each were removed (exit 1 when there is no such student).
    Delete {
        /// The student's id, as GET /api/session or a grader's submission names it.
        id: String,
        #[command(flatten)]
        database: DatabaseArg,
    },
}

#[derive(Args)]
struct SweepArgs {
    #[command(flatten)]
    database: DatabaseArg,
    #[command(flatten)]
    expiry: ExpiryArgs,
}

/// How long what anyone can store is kept.
#[derive(Args)]
struct ExpiryArgs {
    /// How long an Idempotency-Key and its stored answer are kept, in hours.
    #[arg(long, env = "IDEMPOTENCY_TTL_HOURS", default_value_t = config::DEFAULT_IDEMPOTENCY_TTL_HOURS)]
    idempotency_ttl_hours: u64,
    /// How long a session with no attempt and no draft is kept, in days.
    #[arg(long, env = "WORKLESS_SESSION_DAYS", default_value_t = config::DEFAULT_WORKLESS_SESSION_DAYS)]
    workless_session_days: u64,
}

impl ExpiryArgs {
    fn apply(&self, config: Config) -> Config {
        Config {
            idempotency_ttl: Duration::from_secs(self.idempotency_ttl_hours.saturating_mul(3600)),
            workless_session_ttl: Duration::from_secs(
                self.workless_session_days.saturating_mul(86_400),
            ),
            ..config
        }
    }
}

#[derive(Args)]
struct AutogradeArgs {
    /// The folder of the student's upload: one design file, bare or as the canvas exports it.
    #[arg(long, default_value = server::autograde::SUBMISSION_DIR)]
    submission: PathBuf,
    /// Where to write the result.
    #[arg(long, default_value = server::autograde::RESULTS_FILE)]
    results: PathBuf,
    /// The scenario the assignment grades; without it, the one the exported file names.
    #[arg(long)]
    scenario: Option<String>,
    /// The folder of scenario files.
    #[arg(long, env = "SCENARIOS_DIR", default_value = "scenarios")]
    scenarios: PathBuf,
    /// When students see the result: hidden, after_due_date, after_published or visible.
    #[arg(long, default_value = "visible", value_parser = server::autograde::VISIBILITIES)]
    visibility: String,
    /// When students see the autograder's printed output (the same values).
    #[arg(long, default_value = "hidden", value_parser = server::autograde::VISIBILITIES)]
    stdout_visibility: String,
}

#[derive(Args)]
struct LoadArgs {
    /// The server, for example http://127.0.0.1:3000
    #[arg(long)]
    url: String,
    /// How many clients, each with its own session, make requests at once.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// How long to run, in seconds.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// The weighted mix of requests, for example check=6,submit=2,catalogue=2 (the default
    /// when no --route is given).
    #[arg(long, conflicts_with = "route")]
    mix: Option<String>,
    /// One route instead of the mix, for example --route POST /api/floor?bytes=256
    #[arg(long, num_args = 2, value_names = ["METHOD", "PATH"])]
    route: Option<Vec<String>>,
    /// The request body of --route, read from a file.
    #[arg(long, requires = "route")]
    body: Option<PathBuf>,
}

#[derive(Args)]
struct DatabaseArg {
    /// sqlite://PATH (created when missing) or postgres://…
    #[arg(long, env = "DATABASE_URL", default_value = server::store::DEFAULT_DATABASE_URL)]
    database_url: String,
}

#[derive(Args)]
struct ServeArgs {
    /// The address to listen on; port 0 picks a free port.
    #[arg(long, env = "BIND", default_value = "127.0.0.1:3000")]
    bind: String,
    #[command(flatten)]
    database: DatabaseArg,
    /// The folder of scenario files.
    #[arg(long, env = "SCENARIOS_DIR", default_value = "scenarios")]
    scenarios: PathBuf,
    /// Serve the web app from this folder (cargo xtask dist builds web/dist) instead of the
    /// one built into the binary; for development.
    #[arg(long, env = "STATIC_DIR")]
    static_dir: Option<PathBuf>,
    /// The largest request body, in bytes (POST /api/grade accepts 64 times as much).
    #[arg(long, env = "BODY_LIMIT_BYTES", default_value_t = config::DEFAULT_BODY_LIMIT_BYTES)]
    body_limit_bytes: usize,
    /// The longest a request may run, in seconds.
    #[arg(long, env = "REQUEST_TIMEOUT_SECONDS", default_value_t = config::DEFAULT_REQUEST_TIMEOUT_SECONDS)]
    request_timeout_seconds: u64,
    /// The most failure schedules one check may explore before it is refused as too large.
    #[arg(long, env = "CHECK_MAX_SCHEDULES", default_value_t = Config::default().check_limits.max_schedules)]
    check_max_schedules: u64,
    /// The most designs a scenario's palette may allow for the server to work out every
    /// design's verdict in the background after it starts (its verdict table), so that a check
    /// is answered by a lookup; a scenario past it is always searched. 0 builds no table.
    #[arg(long, env = "VERDICT_TABLE_DESIGNS_MAX", default_value_t = config::DEFAULT_VERDICT_TABLE_DESIGNS_MAX)]
    verdict_table_designs_max: u64,
    /// Memory for verdicts already given, in MiB: a design checked again is answered without
    /// running the simulator; 0 checks every design anew.
    #[arg(long, env = "VERDICT_CACHE_MB", default_value_t = config::DEFAULT_VERDICT_CACHE_MIB)]
    verdict_cache_mb: usize,
    /// Requests per second each client may make to /api, sustained: a grader token, a student
    /// session, or the requests of one address with neither (one client between them; an IPv6
    /// client by its /64). A check costs one more request per millisecond it ran (not for a
    /// grader token). 0 turns every rate limit off, the check and join limits included.
    #[arg(long, env = "RATE_LIMIT_PER_SECOND", default_value_t = config::DEFAULT_RATE_LIMIT_PER_SECOND)]
    rate_limit_per_second: u32,
    /// Requests each client may make at once before the sustained rate applies.
    #[arg(long, env = "RATE_LIMIT_BURST", default_value_t = config::DEFAULT_RATE_LIMIT_BURST)]
    rate_limit_burst: u32,
    /// How long an in-flight Idempotency-Key is held by a server that stopped renewing it
    /// (because it died) before a retry takes it over, in seconds.
    #[arg(long, env = "IDEMPOTENCY_LEASE_SECONDS", default_value_t = config::DEFAULT_IDEMPOTENCY_LEASE_SECONDS)]
    idempotency_lease_seconds: u64,
    /// Mount POST /api/floor?bytes=N: a fixed JSON answer of N bytes that does no work, for
    /// benchmarks to compare against.
    #[arg(long, env = "FLOOR_ROUTE")]
    floor_route: bool,
    /// How many times one client's rate limit each address gets (every /api request spends
    /// from its address's bucket too).
    #[arg(long, env = "ADDRESS_RATE_FACTOR", default_value_t = config::DEFAULT_ADDRESS_RATE_FACTOR)]
    address_rate_factor: u32,
    /// Checks one address (an IPv6 client by its /64) may run at once; the next ones wait
    /// their turn. The default is half the cores, at least one.
    #[arg(long, env = "CHECKS_PER_ADDRESS", default_value_t = config::default_checks_per_address())]
    checks_per_address: usize,
    /// The most classes one grader token may make (POST /api/classes answers
    /// class_limit_reached past it).
    #[arg(long, env = "CLASSES_PER_TOKEN_MAX", default_value_t = config::DEFAULT_CLASSES_PER_TOKEN_MAX)]
    classes_per_token_max: u32,
    /// Requests per second one address may make for pages, static files, /readyz and
    /// /metrics; 0 turns this limit off.
    #[arg(long, env = "PAGE_RATE_LIMIT_PER_SECOND", default_value_t = config::DEFAULT_PAGE_RATE_LIMIT_PER_SECOND)]
    page_rate_limit_per_second: u32,
    /// Page requests one address may make at once.
    #[arg(long, env = "PAGE_RATE_LIMIT_BURST", default_value_t = config::DEFAULT_PAGE_RATE_LIMIT_BURST)]
    page_rate_limit_burst: u32,
    /// A reverse proxy (an address or CIDR network) whose X-Forwarded-For names the client;
    /// repeat it for several. Without it the header is ignored.
    #[arg(
        long = "trusted-proxy",
        env = "TRUSTED_PROXIES",
        value_delimiter = ',',
        value_name = "CIDR"
    )]
    trusted_proxies: Vec<server::net::Cidr>,
    /// Require Authorization: Bearer TOKEN on /metrics.
    #[arg(long, env = "METRICS_TOKEN", hide_env_values = true)]
    metrics_token: Option<String>,
    #[command(flatten)]
    expiry: ExpiryArgs,
    /// The largest answer stored to replay an Idempotency-Key, in bytes; a larger one is
    /// stored without its verdict or details.
    #[arg(long, env = "IDEMPOTENCY_ANSWER_MAX_BYTES", default_value_t = config::DEFAULT_IDEMPOTENCY_ANSWER_MAX_BYTES)]
    idempotency_answer_max_bytes: usize,
    /// The most bytes of drafts one student may keep, over every scenario.
    #[arg(long, env = "DRAFT_BYTES_PER_STUDENT", default_value_t = config::DEFAULT_DRAFT_BYTES_PER_STUDENT)]
    draft_bytes_per_student: usize,
    /// How often expired idempotency records and sessions with no work are removed, in
    /// seconds; 0 never (then run `pipeline-builder sweep`).
    #[arg(long, env = "SWEEP_PERIOD_SECONDS", default_value_t = config::DEFAULT_SWEEP_PERIOD_SECONDS)]
    sweep_period_seconds: u64,
    /// How long a connection may take to send a request's headers, and may sit idle between
    /// two requests, in seconds.
    #[arg(long, env = "HEADER_TIMEOUT_SECONDS", default_value_t = config::DEFAULT_HEADER_TIMEOUT_SECONDS)]
    header_timeout_seconds: u64,
    /// How long a request's body may take to arrive, in seconds.
    #[arg(long, env = "BODY_TIMEOUT_SECONDS", default_value_t = config::DEFAULT_BODY_TIMEOUT_SECONDS)]
    body_timeout_seconds: u64,
    /// The most connections open at once; past it, new connections wait to be accepted.
    #[arg(long, env = "MAX_CONNECTIONS", default_value_t = config::DEFAULT_MAX_CONNECTIONS)]
    max_connections: usize,
    /// Clients reach the server only over HTTPS (through a TLS proxy): send HSTS and always
    /// use the `__Host-pb_session` cookie with `Secure`.
    #[arg(long, env = "HTTPS")]
    https: bool,
    /// Ignore `X-Forwarded-Proto`: no proxy in front sets it, so a client's own is not
    /// believed.
    #[arg(long, env = "IGNORE_FORWARDED_PROTO")]
    ignore_forwarded_proto: bool,
    /// Watch the scenarios folder and serve each change once it validates, without a
    /// restart; a change with problems is logged and not served. Also starts on a folder
    /// with problems, serving nothing until they are fixed.
    #[arg(long, env = "WATCH")]
    watch: bool,
    /// Serve the author page (/author): every scenario with its reference and wrong designs,
    /// their verdicts and the files' problems. It shows the answers, so only on a loopback
    /// address.
    #[arg(long, env = "AUTHOR")]
    author: bool,
    /// The URL students reach this server at, for example https://pipelines.example.edu:
    /// learning platforms send LTI launches back to it (GET /lti/config lists the URLs).
    #[arg(long, env = "PUBLIC_URL")]
    public_url: Option<String>,
    /// An origin that may show the app in a frame, for example a learning platform's
    /// https://school.instructure.com; repeat for several. Registered LTI platforms' issuer
    /// and authorization origins may always.
    #[arg(
        long = "frame-ancestor",
        env = "FRAME_ANCESTORS",
        value_delimiter = ',',
        value_name = "ORIGIN"
    )]
    frame_ancestors: Vec<String>,
}

#[derive(Subcommand)]
enum ScenariosCommand {
    /// Validate scenario files or folders (default: scenarios/); print every problem.
    Validate {
        paths: Vec<PathBuf>,
        /// For every reference and wrong design, print which requirements it passes and
        /// misses, how many schedules were explored and how long its check took; then the
        /// summary of the scenario's solve (`scenarios solve`).
        #[arg(long, short)]
        verbose: bool,
        /// Also fail unless one of the scenarios has this id (the autograder's `setup.sh`
        /// checks the scenario its `run_autograder` grades).
        #[arg(long, value_name = "ID")]
        scenario: Option<String>,
    },
    /// Write a new scenario file, ID.json, that validates, for you to change: a small
    /// template, or a copy of an existing scenario with a new id, order and title.
    New(NewArgs),
    /// Check every design the scenario's palette allows and summarise: which pass (simplest
    /// first), how many miss each requirement, which requirements and failure kinds change
    /// nothing, and the closest designs when none passes (exit 0: a design passes, 1: none
    /// does, 2: bad input or past the limit).
    Solve(SolveArgs),
}

#[derive(Args)]
struct SolveArgs {
    /// The scenario's id, for example safe-retry.
    id: String,
    /// The folder of scenario files.
    #[arg(long, env = "SCENARIOS_DIR", default_value = "scenarios")]
    scenarios: PathBuf,
    /// Print every design with its options and the requirements it misses, as JSON.
    #[arg(long)]
    json: bool,
    /// The most designs the palette may allow.
    #[arg(long, value_name = "N", default_value_t = shared::solve::MAX_DESIGNS)]
    max_designs: u64,
}

#[derive(Args)]
struct NewArgs {
    /// The new scenario's id: lowercase letters, digits and dashes, such as late-orders.
    id: String,
    /// Copy this scenario (its id, or the path of its file) instead of the template.
    #[arg(long, value_name = "EXISTING")]
    from: Option<String>,
    /// The folder of scenario files, where ID.json is written.
    #[arg(long, env = "SCENARIOS_DIR", default_value = "scenarios")]
    scenarios: PathBuf,
}

#[derive(Args)]
struct CheckArgs {
    /// The scenario id, for example safe-retry.
    #[arg(long)]
    scenario: String,
    /// The folder of scenario files.
    #[arg(long, env = "SCENARIOS_DIR", default_value = "scenarios")]
    scenarios: PathBuf,
    /// The design's JSON file.
    design: PathBuf,
    /// Print the verdict as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Make a grader token and print it once. Without --staff it is a server administrator's
    /// token, which may do everything in every class.
    Create {
        #[arg(long)]
        name: String,
        /// The staff account the token acts for: it may do in each class what the account's
        /// role there allows (`pipeline-builder staff add` makes an account).
        #[arg(long)]
        staff: Option<String>,
        /// The token may only read, whatever the account's roles.
        #[arg(long)]
        read_only: bool,
        #[command(flatten)]
        database: DatabaseArg,
    },
    /// List the grader tokens (names and dates, never the tokens).
    List {
        #[command(flatten)]
        database: DatabaseArg,
    },
    /// Revoke a grader token by name.
    Revoke {
        name: String,
        #[command(flatten)]
        database: DatabaseArg,
    },
}

/// The allocator of the whole binary (see `Cargo.toml`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    match cli.command {
        Command::Serve(args) => runtime().block_on(serve(args)),
        Command::Scenarios(ScenariosCommand::Validate {
            paths,
            verbose,
            scenario,
        }) => validate(paths, verbose, scenario.as_deref()),
        Command::Scenarios(ScenariosCommand::New(args)) => new_scenario(args),
        Command::Scenarios(ScenariosCommand::Solve(args)) => solve_scenario(args),
        Command::Check(args) => check(args),
        Command::Token(command) => runtime().block_on(token(command)),
        Command::Staff(command) => runtime().block_on(server::staff_cli::run(command)),
        Command::Load(args) => runtime().block_on(load(args)),
        Command::Sweep(args) => runtime().block_on(sweep(args)),
        Command::Autograde(args) => autograde(args),
        Command::Backup(args) => runtime().block_on(backup(args)),
        Command::Lti(command) => runtime().block_on(server::lti::cli::run(command)),
        Command::Student(StudentCommand::Delete { id, database }) => {
            runtime().block_on(delete_student(&id, &database.database_url))
        }
        Command::Regrade(args) => runtime().block_on(regrade(args)),
    }
}

/// Logs go to stderr, filtered by `RUST_LOG`; `LOG_FORMAT=json` writes one JSON object per
/// line for a log collector.
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if std::env::var("LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json")) {
        builder.json().init();
    } else {
        builder.init();
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("the async runtime starts")
}

async fn serve(args: ServeArgs) -> ExitCode {
    let scenarios_dir = args.scenarios.clone();
    let loaded = tokio::task::spawn_blocking(move || catalogue::load(&scenarios_dir)).await;
    let live = match loaded {
        Ok(Ok(c)) => Arc::new(LiveCatalogue::new(c)),
        Ok(Err(problems)) => {
            for p in &problems {
                eprintln!("{p}");
            }
            if !args.watch {
                eprintln!(
                    "refusing to start: {} problem(s) in the scenario files under {}",
                    problems.len(),
                    args.scenarios.display()
                );
                return ExitCode::FAILURE;
            }
            eprintln!(
                "{} problem(s) in the scenario files under {}: serving no scenario until they are fixed",
                problems.len(),
                args.scenarios.display()
            );
            Arc::new(LiveCatalogue::broken(problems))
        }
        Err(e) => {
            eprintln!("loading the scenarios failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let store = match Store::connect(&args.database.database_url).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let static_dir = match &args.static_dir {
        Some(dir) if dir.join("index.html").is_file() => Some(dir.clone()),
        Some(dir) => {
            tracing::warn!(dir = %dir.display(), "no built web app there (no index.html); serving the one built into the binary");
            None
        }
        None => None,
    };
    if static_dir.is_none() {
        if server::embedded::is_built() {
            let (files, bytes) = server::embedded::summary();
            tracing::info!(files, bytes, "serving the web app built into the binary");
        } else {
            tracing::warn!("this binary was built without the web app: / says how to build it (cargo xtask dist, then build the server again), or pass --static-dir web/dist");
        }
    }
    // Each origin as the policy writes it; anything else (a path, a `;`) is refused.
    let mut frame_ancestors = Vec::new();
    for given in &args.frame_ancestors {
        match reqwest::Url::parse(given.trim()) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {
                frame_ancestors.push(u.origin().ascii_serialization())
            }
            _ => {
                eprintln!("--frame-ancestor takes an origin such as https://school.instructure.com, not \"{given}\"");
                return ExitCode::from(2);
            }
        }
    }
    let config = Config {
        body_limit_bytes: args.body_limit_bytes,
        grade_body_limit_bytes: args
            .body_limit_bytes
            .saturating_mul(config::GRADE_BODY_LIMIT_FACTOR),
        request_timeout: Duration::from_secs(args.request_timeout_seconds),
        idempotency_lease: Duration::from_secs(args.idempotency_lease_seconds.max(1)),
        rate_limit: (args.rate_limit_per_second > 0).then(|| config::RateLimit {
            per_second: f64::from(args.rate_limit_per_second),
            burst: f64::from(args.rate_limit_burst.max(1)),
        }),
        floor_route: args.floor_route,
        verdict_cache_bytes: args.verdict_cache_mb.saturating_mul(1024 * 1024),
        verdict_table_designs_max: args.verdict_table_designs_max,
        https: args.https,
        trust_forwarded_proto: !args.ignore_forwarded_proto,
        static_dir,
        embedded_app: true,
        check_limits: shared::Limits {
            max_schedules: args.check_max_schedules,
            ..Config::default().check_limits
        },
        address_rate_factor: f64::from(args.address_rate_factor.max(1)),
        checks_per_address: args.checks_per_address.max(1),
        classes_per_token_max: args.classes_per_token_max,
        page_rate_limit: (args.page_rate_limit_per_second > 0).then(|| config::RateLimit {
            per_second: f64::from(args.page_rate_limit_per_second),
            burst: f64::from(args.page_rate_limit_burst.max(1)),
        }),
        trusted_proxies: args.trusted_proxies.clone(),
        metrics_token: args.metrics_token.clone().filter(|t| !t.is_empty()),
        idempotency_answer_max_bytes: args.idempotency_answer_max_bytes,
        draft_bytes_per_student: args.draft_bytes_per_student,
        sweep_period: (args.sweep_period_seconds > 0)
            .then(|| Duration::from_secs(args.sweep_period_seconds)),
        header_timeout: Duration::from_secs(args.header_timeout_seconds.max(1)),
        body_timeout: Duration::from_secs(args.body_timeout_seconds.max(1)),
        max_connections: args.max_connections.max(1),
        author: args.author,
        public_url: args.public_url.clone(),
        frame_ancestors,
        ..args.expiry.apply(Config::default())
    };
    let listener = match tokio::net::TcpListener::bind(&args.bind).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("cannot listen on {}: {e}", args.bind);
            return ExitCode::FAILURE;
        }
    };
    if args.author && !listener.local_addr().is_ok_and(|a| a.ip().is_loopback()) {
        eprintln!("refusing to start: --author shows every scenario's answers, so it is served on a loopback address only (for example --bind 127.0.0.1:3000), not on {}", args.bind);
        return ExitCode::FAILURE;
    }
    let watcher = if args.watch {
        match server::watch::spawn(Arc::clone(&live), args.scenarios.clone()) {
            Ok(task) => Some(task),
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        None
    };
    let address = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| args.bind.clone());
    tracing::info!(
        scenarios = live.current().len(),
        database = store.backend(),
        "ready"
    );
    // Scripts and tests read this line to learn the port.
    println!("pipeline-builder listening on http://{address}");
    if args.author {
        println!("the author page: http://{address}/author");
    }
    // The tool's LTI key is made at first start, so that /lti/jwks never waits for it.
    if let Err(e) = server::lti::keys::current(&store).await {
        tracing::warn!("the LTI key could not be made now (it is made at first need): {e}");
    }
    let state = AppState::live(store.clone(), live, config);
    // Scores of students launched from a learning platform go back to it, through the same
    // client (and token cache) the launches use.
    let grades = server::lti::grades::spawn(
        store.clone(),
        state.outbound().clone(),
        Duration::from_secs(5),
    );
    let result = server::app::serve(listener, state).await;
    if let Some(task) = watcher {
        task.abort();
    }
    grades.abort();
    store.close().await;
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("the server stopped: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn backup(args: BackupArgs) -> ExitCode {
    let url = &args.database.database_url;
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        eprintln!("the database is PostgreSQL; back it up with pg_dump, for example:");
        println!(
            "pg_dump --format=custom --file={} --dbname=\"$DATABASE_URL\"",
            args.file.display()
        );
        return ExitCode::FAILURE;
    }
    // Connecting would create a missing database: an empty copy is no backup.
    match sqlx::sqlite::SqliteConnectOptions::from_str(url) {
        Ok(options) if !options.get_filename().exists() => {
            eprintln!(
                "there is no database at {}",
                options.get_filename().display()
            );
            return ExitCode::FAILURE;
        }
        Ok(_) => {}
        Err(e) => {
            eprintln!("bad database URL: {e}");
            return ExitCode::FAILURE;
        }
    }
    if args.file.exists() {
        eprintln!(
            "{}: the file exists already; a backup never overwrites one",
            args.file.display()
        );
        return ExitCode::FAILURE;
    }
    let store = match Store::connect(url).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let result = store.backup_sqlite(&args.file).await;
    store.close().await;
    match result {
        Ok(()) => {
            let bytes = std::fs::metadata(&args.file).map(|m| m.len()).unwrap_or(0);
            println!("backed up to {} ({bytes} bytes)", args.file.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{}: {e}", args.file.display());
            ExitCode::FAILURE
        }
    }
}

async fn delete_student(id: &str, database_url: &str) -> ExitCode {
    let store = match Store::connect(database_url).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let result = store.delete_student(id).await;
    store.close().await;
    match result {
        Ok(Some(removed)) => {
            let counts: Vec<String> = removed
                .iter()
                .map(|(what, n)| format!("{n} {what}"))
                .collect();
            println!("deleted student {id}: removed {}", counts.join(", "));
            eprintln!(
                "backups made before now still hold this student's data: delete or expire them too \
                 (docs/operations.md, \"Erasure requests\"); the audit log keeps only the random id {id}"
            );
            ExitCode::SUCCESS
        }
        Ok(None) => {
            eprintln!("there is no student {id}; nothing was removed");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("database error: {e}; nothing was removed");
            ExitCode::FAILURE
        }
    }
}

async fn regrade(args: RegradeArgs) -> ExitCode {
    let catalogue = match catalogue::load(&args.scenarios) {
        Ok(c) => c,
        Err(problems) => {
            for p in &problems {
                eprintln!("{p}");
            }
            return ExitCode::from(2);
        }
    };
    let Some(entry) = catalogue.get(&args.scenario) else {
        eprintln!(
            "there is no scenario \"{}\" in {}",
            args.scenario,
            args.scenarios.display()
        );
        return ExitCode::from(2);
    };
    let store = match Store::connect(&args.database.database_url).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(class) = &args.class {
        match store.get_class(class).await {
            Ok(Some(_)) => {}
            Ok(None) => {
                eprintln!("there is no class {class}");
                store.close().await;
                return ExitCode::from(2);
            }
            Err(e) => {
                eprintln!("database error: {e}");
                store.close().await;
                return ExitCode::FAILURE;
            }
        }
    }
    let result = server::regrade::regrade(
        &store,
        entry,
        args.class.as_deref(),
        Config::default().check_limits,
        |done, total| println!("regraded {done} of {total}"),
    )
    .await;
    store.close().await;
    match result {
        Ok(report) => {
            print!("{}", server::regrade::report_text(&report));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}; the verdicts recorded so far are kept, and running the command again goes on from there");
            ExitCode::FAILURE
        }
    }
}

async fn sweep(args: SweepArgs) -> ExitCode {
    let store = match Store::connect(&args.database.database_url).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let config = args.expiry.apply(Config::default());
    let metrics = server::metrics::Metrics::default();
    let result = server::sweep::sweep_once(&store, &config, &metrics).await;
    store.close().await;
    match result {
        Ok(swept) => {
            println!(
                "removed {} idempotency record(s) and {} session(s) with no work",
                swept.idempotency, swept.sessions
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("database error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn load(args: LoadArgs) -> ExitCode {
    let workload = match (&args.route, &args.mix) {
        (Some(route), _) => {
            let method = match reqwest::Method::from_bytes(route[0].to_ascii_uppercase().as_bytes())
            {
                Ok(m) => m,
                Err(_) => {
                    eprintln!("\"{}\" is not an HTTP method", route[0]);
                    return ExitCode::from(2);
                }
            };
            let body = match &args.body {
                Some(file) => match std::fs::read(file) {
                    Ok(b) => Some(b),
                    Err(e) => {
                        eprintln!("{}: cannot read the body: {e}", file.display());
                        return ExitCode::from(2);
                    }
                },
                None => None,
            };
            server::load::Workload::Route {
                method,
                path: route[1].clone(),
                body,
            }
        }
        (None, mix) => match server::load::Workload::parse_mix(
            mix.as_deref().unwrap_or("check=6,submit=2,catalogue=2"),
        ) {
            Ok(w) => w,
            Err(e) => {
                eprintln!("--mix: {e}");
                return ExitCode::from(2);
            }
        },
    };
    if args.clients == 0 || args.seconds == 0 {
        eprintln!("--clients and --seconds must be 1 or more");
        return ExitCode::from(2);
    }
    let config = server::load::LoadConfig {
        url: args.url,
        clients: args.clients,
        duration: Duration::from_secs(args.seconds),
        workload,
    };
    match server::load::run(config).await {
        Ok(summary) => {
            print!("{}", server::load::table(&summary));
            match serde_json::to_string(&summary) {
                Ok(json) => println!("{json}"),
                Err(e) => eprintln!("cannot write the summary: {e}"),
            }
            if summary.errors == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("the load could not run: {e}");
            ExitCode::FAILURE
        }
    }
}

fn validate(paths: Vec<PathBuf>, verbose: bool, expected: Option<&str>) -> ExitCode {
    let paths = if paths.is_empty() {
        vec![PathBuf::from("scenarios")]
    } else {
        paths
    };
    let (mut result, mut warnings) = catalogue::validate_paths_with_warnings(&paths);
    let solved = catalogue::solve_paths(&paths);
    let mut solve_problems = Vec::new();
    for found in &solved {
        warnings.extend(found.warnings.iter().cloned());
        solve_problems.extend(found.problems.iter().cloned());
    }
    if !solve_problems.is_empty() {
        let mut problems = result.err().unwrap_or_default();
        problems.append(&mut solve_problems);
        result = Err(problems);
    }
    for w in &warnings {
        println!("{w}");
    }
    match result {
        Ok(scenarios) => {
            if verbose {
                for scenario in &scenarios {
                    print!("{}", design_report(scenario));
                    let id = &scenario.scenario().id;
                    let solution = solved
                        .iter()
                        .filter_map(|f| f.solution.as_ref())
                        .find(|s| &s.scenario == id);
                    if let Some(solution) = solution {
                        println!("  solve:");
                        for line in solution.summary().lines() {
                            println!("    {line}");
                        }
                    }
                }
            }
            let noun = if scenarios.len() == 1 {
                "scenario"
            } else {
                "scenarios"
            };
            println!("{} {noun} valid", scenarios.len());
            match expected {
                Some(id) if !scenarios.iter().any(|s| s.scenario().id == id) => {
                    let ids: Vec<&str> =
                        scenarios.iter().map(|s| s.scenario().id.as_str()).collect();
                    eprintln!(
                        "no scenario has the id \"{id}\"; the ids are {}",
                        ids.join(", ")
                    );
                    ExitCode::FAILURE
                }
                _ => ExitCode::SUCCESS,
            }
        }
        Err(problems) => {
            for p in &problems {
                println!("{p}");
            }
            eprintln!("{} problem(s) found", problems.len());
            ExitCode::FAILURE
        }
    }
}

/// What each reference and wrong design of a scenario passes and misses, with the schedules
/// explored and the time its check took.
fn design_report(compiled: &shared::Compiled) -> String {
    use std::fmt::Write;
    let scenario = compiled.scenario();
    let mut out = format!(
        "{} (order {}, bound {}):\n",
        scenario.id, scenario.order, scenario.failures.bound
    );
    let designs = scenario
        .reference_designs
        .iter()
        .map(|d| ("reference", d.name.as_str(), &d.design, &[][..]))
        .chain(
            scenario
                .wrong_designs
                .iter()
                .map(|d| ("wrong", d.name.as_str(), &d.design, d.misses.as_slice())),
        );
    for (what, name, design, misses) in designs {
        let started = std::time::Instant::now();
        let result = shared::check_json(compiled, design);
        let took = started.elapsed();
        let _ = writeln!(out, "  {what} \"{name}\"");
        match result {
            Ok(verdict) => {
                let (passed, missed): (Vec<_>, Vec<_>) =
                    verdict.requirements.iter().partition(|r| r.passed);
                let ids = |list: &[&shared::verdict::RequirementVerdict]| {
                    if list.is_empty() {
                        "none".to_string()
                    } else {
                        list.iter()
                            .map(|r| r.id.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                };
                let _ = writeln!(out, "    passes: {}", ids(&passed));
                let _ = write!(out, "    misses: {}", ids(&missed));
                if !misses.is_empty() {
                    let _ = write!(out, " (must miss: {})", misses.join(", "));
                }
                let _ = writeln!(
                    out,
                    "\n    {} schedules explored in {:.1} ms",
                    verdict.schedules_explored,
                    took.as_secs_f64() * 1000.0
                );
            }
            Err(e) => {
                let _ = writeln!(out, "    not checked: {e}");
            }
        }
    }
    out
}

/// `scenarios solve ID`: every design of the palette, checked, summarised or as JSON.
fn solve_scenario(args: SolveArgs) -> ExitCode {
    let scenario = match catalogue::find(&args.scenarios, &args.id) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let limits = shared::solve::SolveLimits {
        max_designs: args.max_designs,
        ..Default::default()
    };
    let mut bar = server::progress::Bar::new(&format!("solving {}", args.id));
    let started = std::time::Instant::now();
    let result = shared::solve::solve_with(&scenario, limits, &mut |p| bar.show(p.done, p.total));
    bar.clear();
    let solution = match result {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{}: {e}", args.id);
            return ExitCode::from(2);
        }
    };
    if args.json {
        match serde_json::to_string_pretty(&solution.to_json()) {
            Ok(text) => println!("{text}"),
            Err(e) => {
                eprintln!("cannot write the solve: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        println!("{}", solution.summary());
        println!("solved in {:.2} s", started.elapsed().as_secs_f64());
    }
    if solution.passing().is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// `scenarios new ID [--from EXISTING]`: writes DIR/ID.json, never over a file.
fn new_scenario(args: NewArgs) -> ExitCode {
    use std::io::Write;
    if !shared::authoring::is_valid_id(&args.id) {
        eprintln!(
            "\"{}\" cannot be a scenario id: use lowercase letters, digits and dashes, such as late-orders (it is used in URLs)",
            args.id
        );
        return ExitCode::from(2);
    }
    if !args.scenarios.is_dir() {
        eprintln!(
            "{}: there is no such folder; give the scenarios folder with --scenarios",
            args.scenarios.display()
        );
        return ExitCode::from(2);
    }
    let target = args.scenarios.join(format!("{}.json", args.id));
    if target.exists() {
        eprintln!(
            "{} exists already; it is left as it is. Choose another id, or remove the file first",
            target.display()
        );
        return ExitCode::FAILURE;
    }
    let (files, _) = catalogue::read_files(std::slice::from_ref(&args.scenarios));
    let raw: Vec<(String, serde_json::Value)> = files
        .iter()
        .filter_map(|(file, text)| Some((file.clone(), serde_json::from_str(text).ok()?)))
        .collect();
    if let Some((file, _)) = raw.iter().find(|(_, json)| json["id"] == args.id.as_str()) {
        eprintln!(
            "{file} already has the id \"{}\"; choose another id",
            args.id
        );
        return ExitCode::FAILURE;
    }
    let order = raw
        .iter()
        .filter_map(|(_, json)| json["order"].as_u64())
        .max()
        .unwrap_or(0)
        .saturating_add(1)
        .min(u64::from(u32::MAX)) as u32;
    let text = match &args.from {
        None => shared::authoring::template(&args.id, order),
        Some(from) => {
            let by_path = PathBuf::from(from);
            let source = if by_path.is_file() {
                std::fs::read_to_string(&by_path)
                    .map_err(|e| format!("{from}: cannot read it: {e}"))
            } else {
                files
                    .iter()
                    .zip(&raw)
                    .find(|(_, (_, json))| json["id"] == from.as_str())
                    .map(|((_, text), _)| text.clone())
                    .ok_or_else(|| {
                        let mut known: Vec<&str> =
                            raw.iter().filter_map(|(_, j)| j["id"].as_str()).collect();
                        known.sort_unstable();
                        format!(
                            "there is no scenario \"{from}\" in {}; known: {}",
                            args.scenarios.display(),
                            known.join(", ")
                        )
                    })
            };
            let source = match source {
                Ok(text) => text,
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::from(2);
                }
            };
            let title = serde_json::from_str::<serde_json::Value>(&source)
                .ok()
                .and_then(|j| j["title"].as_str().map(|t| format!("{t} (copy)")))
                .unwrap_or_else(|| args.id.clone());
            match shared::authoring::renamed_copy(&source, &args.id, order, &title) {
                Some(text) => text,
                None => {
                    eprintln!("{from}: it has no top-level id, order and title to change");
                    return ExitCode::from(2);
                }
            }
        }
    };
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&target)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    match written {
        Ok(()) => {
            println!("{}", target.display());
            eprintln!(
                "wrote {} (order {order}); change it, then run: pipeline-builder scenarios validate {}",
                target.display(),
                target.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            eprintln!(
                "{} exists already; it is left as it is. Choose another id, or remove the file first",
                target.display()
            );
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("{}: cannot write it: {e}", target.display());
            ExitCode::FAILURE
        }
    }
}

fn check(args: CheckArgs) -> ExitCode {
    let bad_input = |message: String| {
        eprintln!("{message}");
        ExitCode::from(2)
    };
    let scenario = match catalogue::find(&args.scenarios, &args.scenario) {
        Ok(s) => s,
        Err(e) => return bad_input(e),
    };
    let text = match std::fs::read_to_string(&args.design) {
        Ok(t) => t,
        Err(e) => {
            return bad_input(format!(
                "{}: cannot read the design: {e}",
                args.design.display()
            ))
        }
    };
    let design: serde_json::Value = match serde_json::from_str(&text) {
        Ok(d) => d,
        Err(e) => {
            return bad_input(format!(
                "{}: $: the design is not valid JSON: {e}",
                args.design.display()
            ))
        }
    };
    match shared::check_json(&scenario, &design) {
        Ok(verdict) => {
            if args.json {
                match serde_json::to_string_pretty(&verdict) {
                    Ok(text) => println!("{text}"),
                    Err(e) => return bad_input(format!("cannot write the verdict: {e}")),
                }
            } else {
                print!("{}", report::verdict_text(scenario.scenario(), &verdict));
            }
            if verdict.passed {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(shared::CheckError::Design(errors)) => {
            for e in &errors {
                eprintln!("{}: {}: {}", args.design.display(), e.path, e.message);
            }
            ExitCode::from(2)
        }
        Err(e) => bad_input(format!("{}: {e}", display(&args.design))),
    }
}

fn autograde(args: AutogradeArgs) -> ExitCode {
    let graded = server::autograde::grade(&server::autograde::Options {
        submission: args.submission,
        scenarios: args.scenarios,
        scenario: args.scenario,
        visibility: args.visibility,
        stdout_visibility: args.stdout_visibility,
    });
    // Gradescope shows stdout to the course staff, not to students (unless told to).
    println!("{}", graded.log.trim_end());
    if graded.setup_problem {
        eprintln!("the autograder is not set up right: the student got score 0 for it");
    }
    match server::autograde::write(&graded.results, &args.results) {
        Ok(()) => {
            println!("wrote {}", args.results.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{}: cannot write the result: {e}", args.results.display());
            ExitCode::from(2)
        }
    }
}

fn display(path: &Path) -> String {
    path.display().to_string()
}

async fn token(command: TokenCommand) -> ExitCode {
    let url = match &command {
        TokenCommand::Create { database, .. }
        | TokenCommand::List { database }
        | TokenCommand::Revoke { database, .. } => database.database_url.clone(),
    };
    let store = match Store::connect(&url).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let code = match token_command(&store, command).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("database error: {e}");
            ExitCode::FAILURE
        }
    };
    store.close().await;
    code
}

async fn token_command(store: &Store, command: TokenCommand) -> Result<ExitCode, sqlx::Error> {
    match command {
        TokenCommand::Create {
            name,
            staff,
            read_only,
            ..
        } => {
            let name = name.trim().to_string();
            if !server::staff_cli::valid_name(&name) {
                eprintln!("a token name has 1 to 64 characters and no spaces");
                return Ok(ExitCode::from(2));
            }
            if let Some(account) = &staff {
                if !store.account_exists(account).await? {
                    eprintln!("there is no staff account \"{account}\"; pipeline-builder staff add {account} makes one");
                    return Ok(ExitCode::FAILURE);
                }
            }
            let token = match server::auth::new_token() {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("cannot make a random token: {e}");
                    return Ok(ExitCode::FAILURE);
                }
            };
            let hash = server::auth::hash_token(&token);
            if !store
                .create_token_for(&name, &hash, staff.as_deref(), read_only)
                .await?
            {
                eprintln!("a token called \"{name}\" exists already; revoke it first or pick another name");
                return Ok(ExitCode::FAILURE);
            }
            println!("{token}");
            eprintln!("grader token \"{name}\" created; it is shown only this once. Send it as: Authorization: Bearer <token>");
            Ok(ExitCode::SUCCESS)
        }
        TokenCommand::List { .. } => {
            let tokens = store.list_tokens().await?;
            if tokens.is_empty() {
                println!("no grader tokens");
            }
            for t in tokens {
                let created = t.created_at.format("%Y-%m-%d %H:%M:%SZ");
                match t.revoked_at {
                    Some(r) => println!(
                        "{}\tcreated {created}\trevoked {}",
                        t.name,
                        r.format("%Y-%m-%d %H:%M:%SZ")
                    ),
                    None => println!("{}\tcreated {created}\tactive", t.name),
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        TokenCommand::Revoke { name, .. } => {
            if store.revoke_token(&name).await? {
                println!("revoked \"{name}\"");
                Ok(ExitCode::SUCCESS)
            } else {
                eprintln!("there is no active token called \"{name}\"");
                Ok(ExitCode::FAILURE)
            }
        }
    }
}
