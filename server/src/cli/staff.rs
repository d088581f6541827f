//! `pipeline-builder staff`: staff accounts and their roles in classes.
//!
//! An account is a name; what it may do is its role in each class (owner, ta, viewer). It
//! signs in with a token made for it (`pipeline-builder token create --name N --staff ACCOUNT`,
//! `--read-only` to limit it to reading), or through the learning platform.

use std::process::ExitCode;

use clap::Subcommand;

use super::args::{finish, DatabaseArg as Database};
use crate::store::{StaffRole, Store};

#[derive(Subcommand)]
pub enum StaffCommand {
    /// Make a staff account.
    Add {
        /// 1 to 64 characters, no spaces: how the API, the pages and the audit log name it.
        name: String,
        #[command(flatten)]
        database: Database,
    },
    /// List the staff accounts and how many classes each has a role in.
    List {
        #[command(flatten)]
        database: Database,
    },
    /// Give an account a role in a class (replacing the one it had); the audit log records
    /// it as done by `admin:cli`.
    Grant {
        /// The class id (`c-…`).
        #[arg(long)]
        class: String,
        #[arg(long)]
        account: String,
        /// owner, ta or viewer.
        #[arg(long)]
        role: String,
        #[command(flatten)]
        database: Database,
    },
}

impl StaffCommand {
    fn database(&self) -> &Database {
        match self {
            StaffCommand::Add { database, .. }
            | StaffCommand::List { database }
            | StaffCommand::Grant { database, .. } => database,
        }
    }
}

/// True when `name` can name an account or a token: 1 to 64 characters, no spaces or
/// control characters.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.chars().any(|c| c.is_control() || c.is_whitespace())
}

/// Runs a `staff` command: exit 0 done, 1 refused or failed, 2 bad input.
pub async fn run(command: StaffCommand) -> ExitCode {
    let Some(store) = command.database().connect().await else {
        return ExitCode::FAILURE;
    };
    finish(&store, staff_command(&store, command)).await
}

async fn staff_command(store: &Store, command: StaffCommand) -> Result<ExitCode, sqlx::Error> {
    match command {
        StaffCommand::Add { name, .. } => {
            let name = name.trim();
            if !valid_name(name) {
                eprintln!("an account name has 1 to 64 characters and no spaces");
                return Ok(ExitCode::from(2));
            }
            if !store.create_account(name).await? {
                eprintln!("there is an account called \"{name}\" already");
                return Ok(ExitCode::FAILURE);
            }
            println!("staff account \"{name}\" made");
            eprintln!(
                "give it a token: pipeline-builder token create --name {name}-token --staff {name}"
            );
            Ok(ExitCode::SUCCESS)
        }
        StaffCommand::List { .. } => {
            let accounts = store.list_accounts().await?;
            if accounts.is_empty() {
                println!("no staff accounts");
            }
            for (name, classes) in accounts {
                println!("{name}\t{classes} classes");
            }
            Ok(ExitCode::SUCCESS)
        }
        StaffCommand::Grant {
            class,
            account,
            role,
            ..
        } => grant(store, &class, &account, &role).await,
    }
}

async fn grant(
    store: &Store,
    class: &str,
    account: &str,
    role: &str,
) -> Result<ExitCode, sqlx::Error> {
    let Some(role) = StaffRole::parse(role) else {
        eprintln!("a role is owner, ta or viewer");
        return Ok(ExitCode::from(2));
    };
    if store.get_class(class).await?.is_none() {
        eprintln!("there is no class \"{class}\"");
        return Ok(ExitCode::FAILURE);
    }
    if !store.account_exists(account).await? {
        eprintln!("there is no staff account \"{account}\"; pipeline-builder staff add {account} makes one");
        return Ok(ExitCode::FAILURE);
    }
    if !store.grant_staff(class, account, role, "admin:cli").await? {
        eprintln!("{account} is the class's last owner: make another account owner first");
        return Ok(ExitCode::FAILURE);
    }
    println!("{account} is now {} of {class}", role.as_str());
    Ok(ExitCode::SUCCESS)
}
