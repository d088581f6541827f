//! `pipeline-builder lti`: registering platforms and rotating the tool's key.

use std::process::ExitCode;

use clap::Subcommand;

use super::args::DatabaseArg as Database;
use crate::lti::keys;
use crate::lti::store::Platform;

#[derive(Subcommand)]
pub enum LtiCommand {
    /// Learning platforms registered with this tool.
    #[command(subcommand)]
    Platform(PlatformCommand),
    /// The tool's signing key.
    #[command(subcommand)]
    Key(KeyCommand),
}

#[derive(Subcommand)]
pub enum PlatformCommand {
    /// Register a platform (the values come from the platform's registration of the tool).
    Add {
        /// The platform's issuer (`iss`), for example https://canvas.instructure.com.
        #[arg(long)]
        issuer: String,
        /// The client id the platform gave the tool.
        #[arg(long)]
        client_id: String,
        /// A deployment id the platform gave the tool; repeat for several.
        #[arg(long = "deployment-id", required = true)]
        deployment_ids: Vec<String>,
        /// The platform's OIDC authorization endpoint.
        #[arg(long)]
        auth_url: String,
        /// The platform's OAuth 2 token endpoint.
        #[arg(long)]
        token_url: String,
        /// The URL of the platform's public keys (JWKS).
        #[arg(long)]
        jwks_url: String,
        /// An origin where the platform's line items and scores are besides those of the
        /// URLs above, such as a Canvas school's https://school.instructure.com; repeat for
        /// several. The tool sends scores nowhere else.
        #[arg(long = "service-origin")]
        service_origins: Vec<String>,
        #[command(flatten)]
        database: Database,
    },
    /// List the registered platforms.
    List {
        #[command(flatten)]
        database: Database,
    },
    /// Remove a platform by the id `list` shows (its students and their attempts stay).
    Remove {
        id: String,
        #[command(flatten)]
        database: Database,
    },
}

#[derive(Subcommand)]
pub enum KeyCommand {
    /// Make a new signing key; the old one stays published for a day.
    Rotate {
        #[command(flatten)]
        database: Database,
    },
}

/// A URL a platform gives: absolute, http or https.
fn url(name: &str, value: &str) -> Result<(), String> {
    match reqwest::Url::parse(value) {
        Ok(u) if u.scheme() == "https" || u.scheme() == "http" => Ok(()),
        _ => Err(format!(
            "--{name} must be an http or https URL, not \"{value}\""
        )),
    }
}

/// An origin given with `--service-origin`, as the tool compares origins: scheme, host and
/// the port when it is not the scheme's own.
fn service_origin(value: &str) -> Result<String, String> {
    match reqwest::Url::parse(value) {
        Ok(u)
            if (u.scheme() == "https" || u.scheme() == "http")
                && u.path() == "/"
                && u.query().is_none()
                && u.host().is_some() =>
        {
            Ok(u.origin().ascii_serialization())
        }
        _ => Err(format!(
            "--service-origin must be an origin such as https://school.instructure.com, not \"{value}\""
        )),
    }
}

/// The registration `lti platform add` was given, its URLs and origins checked; its id is
/// derived from its issuer and client id.
fn registration(
    issuer: String,
    client_id: String,
    deployments: Vec<String>,
    [auth_url, token_url, jwks_url]: [String; 3],
    service_origins: &[String],
) -> Result<Platform, String> {
    url("auth-url", &auth_url)?;
    url("token-url", &token_url)?;
    url("jwks-url", &jwks_url)?;
    let service_origins = service_origins
        .iter()
        .map(|o| service_origin(o))
        .collect::<Result<Vec<String>, String>>()?;
    let id = {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(format!("{issuer}\n{client_id}").as_bytes());
        digest[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    Ok(Platform {
        id,
        issuer,
        client_id,
        auth_url,
        token_url,
        jwks_url,
        deployments,
        service_origins,
    })
}

/// The registered platforms, a line each, tab-separated under a header line.
fn print_platforms(platforms: &[Platform]) {
    println!("id\tissuer\tclient_id\tdeployments\tauth_url\ttoken_url\tjwks_url\tservice_origins");
    for p in platforms {
        println!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            p.id,
            p.issuer,
            p.client_id,
            p.deployments.join(","),
            p.auth_url,
            p.token_url,
            p.jwks_url,
            p.service_origins.join(",")
        );
    }
}

/// Runs an `lti` command.
pub async fn run(command: LtiCommand) -> ExitCode {
    let database = match &command {
        LtiCommand::Platform(PlatformCommand::Add { database, .. })
        | LtiCommand::Platform(PlatformCommand::List { database })
        | LtiCommand::Platform(PlatformCommand::Remove { database, .. })
        | LtiCommand::Key(KeyCommand::Rotate { database }) => database,
    };
    let Some(store) = database.connect().await else {
        return ExitCode::FAILURE;
    };
    let code = match command {
        LtiCommand::Platform(PlatformCommand::Add {
            issuer,
            client_id,
            deployment_ids,
            auth_url,
            token_url,
            jwks_url,
            service_origins,
            ..
        }) => {
            let urls = [auth_url, token_url, jwks_url];
            let platform =
                match registration(issuer, client_id, deployment_ids, urls, &service_origins) {
                    Ok(platform) => platform,
                    Err(e) => {
                        eprintln!("{e}");
                        store.close().await;
                        return ExitCode::from(2);
                    }
                };
            match store.add_lti_platform(&platform).await {
                Ok(true) => {
                    println!("{}", platform.id);
                    ExitCode::SUCCESS
                }
                Ok(false) => {
                    eprintln!(
                        "a platform with issuer {} and client id {} is registered already; remove it first",
                        platform.issuer, platform.client_id
                    );
                    ExitCode::FAILURE
                }
                Err(e) => {
                    eprintln!("database error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        LtiCommand::Platform(PlatformCommand::List { .. }) => match store.lti_platforms().await {
            Ok(platforms) => {
                print_platforms(&platforms);
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("database error: {e}");
                ExitCode::FAILURE
            }
        },
        LtiCommand::Platform(PlatformCommand::Remove { id, .. }) => {
            match store.remove_lti_platform(&id).await {
                Ok(true) => {
                    println!("removed platform {id}");
                    ExitCode::SUCCESS
                }
                Ok(false) => {
                    eprintln!(
                        "there is no platform {id} (pipeline-builder lti platform list shows them)"
                    );
                    ExitCode::FAILURE
                }
                Err(e) => {
                    eprintln!("database error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        LtiCommand::Key(KeyCommand::Rotate { .. }) => match keys::rotate(&store).await {
            Ok(kid) => {
                println!("{kid}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        },
    };
    store.close().await;
    code
}
