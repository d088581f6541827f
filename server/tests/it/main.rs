//! The server's tests, in one binary: the API through the router without a socket, one test
//! over a real socket, the storage on SQLite and PostgreSQL, two server processes on one
//! PostgreSQL database, the command line, and real answers against the published OpenAPI
//! document.

mod api;
mod autograde;
mod classes;
mod cli;
mod common;
mod crash;
mod csv;
mod deadlines;
mod docs;
mod embedded;
mod fuzz;
mod gradebook;
mod grading;
mod group_commit;
mod limits;
mod load;
mod lti;
mod lti_identity;
mod lti_roles;
mod members;
mod openapi;
mod operations;
mod outage;
mod postgres;
mod processes;
mod readme;
mod roles;
mod security;
mod sessions;
mod socket;
mod storage;
mod stored;
mod tables;
mod watch;
