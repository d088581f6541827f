//! `pipeline-builder token`: grader tokens.

use std::process::ExitCode;

use clap::Subcommand;

use super::args::{finish, DatabaseArg};
use crate::Store;

#[derive(Subcommand)]
pub enum TokenCommand {
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

/// Runs a `token` command.
pub async fn run(command: TokenCommand) -> ExitCode {
    let url = match &command {
        TokenCommand::Create { database, .. }
        | TokenCommand::List { database }
        | TokenCommand::Revoke { database, .. } => database,
    };
    let Some(store) = url.connect().await else {
        return ExitCode::FAILURE;
    };
    finish(&store, token_command(&store, command)).await
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
            if !super::staff::valid_name(&name) {
                eprintln!("a token name has 1 to 64 characters and no spaces");
                return Ok(ExitCode::from(2));
            }
            if let Some(account) = &staff {
                if !store.account_exists(account).await? {
                    eprintln!("there is no staff account \"{account}\"; pipeline-builder staff add {account} makes one");
                    return Ok(ExitCode::FAILURE);
                }
            }
            let token = match crate::auth::new_token() {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("cannot make a random token: {e}");
                    return Ok(ExitCode::FAILURE);
                }
            };
            let hash = crate::auth::hash_token(&token);
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
