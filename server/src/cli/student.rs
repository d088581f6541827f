//! `pipeline-builder student`: a student's records.

use std::process::ExitCode;

use clap::Subcommand;

use super::args::DatabaseArg;

#[derive(Subcommand)]
pub enum StudentCommand {
    /// Delete a student with their attempts, drafts and memberships, in one transaction, and
    /// print how many of each were removed (exit 1 when there is no such student).
    Delete {
        /// The student's id, as GET /api/session or a grader's submission names it.
        id: String,
        #[command(flatten)]
        database: DatabaseArg,
    },
}

/// Runs a `student` command.
pub async fn run(command: StudentCommand) -> ExitCode {
    match command {
        StudentCommand::Delete { id, database } => delete(&id, &database).await,
    }
}

async fn delete(id: &str, database: &DatabaseArg) -> ExitCode {
    let Some(store) = database.connect().await else {
        return ExitCode::FAILURE;
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
