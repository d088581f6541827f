//! `pipeline-builder backup FILE`: a consistent copy of a SQLite database.

use std::path::PathBuf;
use std::process::ExitCode;
use std::str::FromStr;

use clap::Args;

use super::args::DatabaseArg;

#[derive(Args)]
pub struct BackupArgs {
    /// Where to write the copy; it must not exist.
    file: PathBuf,
    #[command(flatten)]
    database: DatabaseArg,
}

/// Runs the command.
pub async fn run(args: BackupArgs) -> ExitCode {
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
    let Some(store) = args.database.connect().await else {
        return ExitCode::FAILURE;
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
