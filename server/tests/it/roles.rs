//! Staff roles per class, on SQLite and PostgreSQL: two owners with a class each, a TA and a
//! viewer of the first class, a read-only token of the first owner and a server
//! administrator. Every instructor route of a class answers each of them as their role in
//! that class allows (the gradebook, scores set by hand, due dates and extensions among
//! them): 403 across classes,
//! viewers' and read-only writes refused, the
//! administrator allowed everywhere. The class list shows each account only its classes; the
//! last owner cannot be made less; the audit log records each change.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};
use server::error::ErrorCode;

use crate::common::{failing_design, As, TestApp};

/// What a route needs of the caller's role in the class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Need {
    /// Any role (a viewer's reading).
    Read,
    /// A TA or owner, with a token that may write.
    Work,
    /// An owner, with a token that may write.
    Own,
    /// An owner, with any token (reading what only owners read).
    OwnerRead,
}

/// The caller of a row of the table: its token and its role in each class (`None` when it
/// has none there), or an administrator.
struct Caller {
    label: &'static str,
    token: String,
    /// The role in class A and in class B; an administrator has `admin` set instead.
    roles: [Option<&'static str>; 2],
    admin: bool,
    read_only: bool,
}

impl Caller {
    fn allowed(&self, class: usize, need: Need) -> bool {
        if self.admin {
            return true;
        }
        let rank = |r: &str| match r {
            "viewer" => 0,
            "ta" => 1,
            _ => 2,
        };
        let Some(role) = self.roles[class] else {
            return false;
        };
        let writes = matches!(need, Need::Work | Need::Own);
        if writes && self.read_only {
            return false;
        }
        let least = match need {
            Need::Read => 0,
            Need::Work => 1,
            Need::Own | Need::OwnerRead => 2,
        };
        rank(role) >= least
    }
}

/// A token for `account` (`None`: an administrator's), stored as `token create` stores it.
async fn token_for(app: &TestApp, name: &str, account: Option<&str>, read_only: bool) -> String {
    let token = server::auth::new_token().expect("randomness");
    let store = app.state.store();
    assert!(store
        .create_token_for(name, &server::auth::hash_token(&token), account, read_only)
        .await
        .expect("the store answers"));
    token
}

async fn account(app: &TestApp, name: &str) {
    assert!(app.state.store().create_account(name).await.unwrap());
}

async fn make_class(app: &TestApp, token: &str, name: &str) -> String {
    let made = app
        .post("/api/classes", &As::grader(token), &json!({"name": name}))
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
    assert_eq!(made.body["role"], "owner", "{}", made.text);
    made.body["id"].as_str().unwrap().to_string()
}

async fn grant(app: &TestApp, token: &str, class: &str, account: &str, role: &str) {
    let answer = app
        .put(
            &format!("/api/classes/{class}/staff/{account}"),
            &As::grader(token),
            &json!({"role": role}),
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    assert_eq!(answer.body["role"], role);
}

/// One route of the table: method, path (with `{class}`, `{student}`, `{attempt}`), body.
struct Route {
    method: Method,
    path: &'static str,
    body: Option<Value>,
    need: Need,
}

fn routes() -> Vec<Route> {
    let route = |method: Method, path: &'static str, body: Option<Value>, need: Need| Route {
        method,
        path,
        body,
        need,
    };
    vec![
        route(Method::GET, "/api/classes/{class}", None, Need::Read),
        route(Method::GET, "/api/classes/{class}/matrix", None, Need::Read),
        route(
            Method::GET,
            "/api/classes/{class}/matrix?format=csv",
            None,
            Need::Read,
        ),
        route(Method::GET, "/api/classes/{class}/missed", None, Need::Read),
        route(
            Method::GET,
            "/api/classes/{class}/attempts",
            None,
            Need::Read,
        ),
        route(
            Method::GET,
            "/api/classes/{class}/attempts?format=csv",
            None,
            Need::Read,
        ),
        route(
            Method::GET,
            "/api/classes/{class}/attempts/{attempt}",
            None,
            Need::Read,
        ),
        route(
            Method::GET,
            "/api/classes/{class}/students/{student}/attempts",
            None,
            Need::Read,
        ),
        route(Method::GET, "/api/classes/{class}/staff", None, Need::Read),
        route(
            Method::GET,
            "/api/classes/{class}/gradebook",
            None,
            Need::Read,
        ),
        route(
            Method::GET,
            "/api/classes/{class}/gradebook?format=csv",
            None,
            Need::Read,
        ),
        route(
            Method::PUT,
            "/api/classes/{class}/students/{student}/scores/safe-retry",
            Some(json!({"score": 1, "reason": "by hand"})),
            Need::Work,
        ),
        route(
            Method::DELETE,
            "/api/classes/{class}/students/{student}/scores/safe-retry",
            None,
            Need::Work,
        ),
        route(
            Method::GET,
            "/api/classes/{class}/audit",
            None,
            Need::OwnerRead,
        ),
        route(
            Method::GET,
            "/api/classes/{class}/audit?format=csv",
            None,
            Need::OwnerRead,
        ),
        route(
            Method::POST,
            "/api/regrade",
            Some(json!({"scenario": "safe-retry", "class": "{class}"})),
            Need::Work,
        ),
        route(
            Method::PATCH,
            "/api/classes/{class}",
            Some(json!({"preview": "lacks"})),
            Need::Own,
        ),
        route(Method::POST, "/api/classes/{class}/close", None, Need::Own),
        route(Method::POST, "/api/classes/{class}/reopen", None, Need::Own),
        route(
            Method::PUT,
            "/api/classes/{class}/staff/extra",
            Some(json!({"role": "viewer"})),
            Need::Own,
        ),
        route(
            Method::DELETE,
            "/api/classes/{class}/staff/extra",
            None,
            Need::Own,
        ),
    ]
}

/// A class's student and one of their attempts.
struct Seeded {
    id: String,
    student: String,
    attempt: String,
}

async fn seed(app: &TestApp, admin: &str, class: &str, name: &str) -> Seeded {
    let code = app
        .get(&format!("/api/classes/{class}"), &As::grader(admin))
        .await
        .body["join_code"]
        .as_str()
        .unwrap()
        .to_string();
    let (cookie, student) = app.new_student().await;
    let joined = app
        .post(
            "/api/classes/join",
            &As::student(&cookie),
            &json!({"code": code, "display_name": name}),
        )
        .await;
    assert!(joined.status.is_success(), "{}", joined.text);
    let submitted = app
        .post(
            "/api/submissions",
            &As::student(&cookie),
            &json!({"scenario": "safe-retry", "design": failing_design(), "class": class}),
        )
        .await;
    assert_eq!(submitted.status, StatusCode::CREATED, "{}", submitted.text);
    Seeded {
        id: class.to_string(),
        student,
        attempt: submitted.body["id"].as_str().unwrap().to_string(),
    }
}

async fn call(app: &TestApp, route: &Route, token: &str, class: &Seeded) -> crate::common::Answer {
    let fill = |text: &str| {
        text.replace("{class}", &class.id)
            .replace("{student}", &class.student)
            .replace("{attempt}", &class.attempt)
    };
    let body = route
        .body
        .as_ref()
        .map(|b| fill(&b.to_string()).into_bytes());
    app.send(
        route.method.clone(),
        &fill(route.path),
        &As::grader(token),
        &[],
        body,
    )
    .await
}

async fn every_route_answers_each_role(app: &TestApp) {
    for name in ["ana", "ben", "tom", "val", "extra"] {
        account(app, name).await;
    }
    let admin = token_for(app, "ops", None, false).await;
    let ana = token_for(app, "ana-laptop", Some("ana"), false).await;
    let ben = token_for(app, "ben-laptop", Some("ben"), false).await;
    let class_a = make_class(app, &ana, "Section A").await;
    let class_b = make_class(app, &ben, "Section B").await;
    grant(app, &ana, &class_a, "tom", "ta").await;
    grant(app, &ana, &class_a, "val", "viewer").await;
    let classes = [
        seed(app, &admin, &class_a, "Léa Dubois").await,
        seed(app, &admin, &class_b, "Omar Haddad").await,
    ];
    let callers = [
        Caller {
            label: "owner of A",
            token: ana.clone(),
            roles: [Some("owner"), None],
            admin: false,
            read_only: false,
        },
        Caller {
            label: "owner of B",
            token: ben.clone(),
            roles: [None, Some("owner")],
            admin: false,
            read_only: false,
        },
        Caller {
            label: "TA of A",
            token: token_for(app, "tom-laptop", Some("tom"), false).await,
            roles: [Some("ta"), None],
            admin: false,
            read_only: false,
        },
        Caller {
            label: "viewer of A",
            token: token_for(app, "val-laptop", Some("val"), false).await,
            roles: [Some("viewer"), None],
            admin: false,
            read_only: false,
        },
        Caller {
            label: "owner of A, read-only token",
            token: token_for(app, "ana-reader", Some("ana"), true).await,
            roles: [Some("owner"), None],
            admin: false,
            read_only: true,
        },
        Caller {
            label: "administrator",
            token: admin.clone(),
            roles: [None, None],
            admin: true,
            read_only: false,
        },
    ];
    let store = app.state.store();
    let mut checked = 0;
    for route in routes() {
        for caller in &callers {
            for (index, class) in classes.iter().enumerate() {
                // The account the DELETE takes away has a role before each call.
                if route.path.ends_with("/staff/extra") {
                    store
                        .grant_staff(
                            &class.id,
                            "extra",
                            server::store::StaffRole::Viewer,
                            "admin:test",
                        )
                        .await
                        .unwrap();
                }
                // The member the DELETE removes is one before each call.
                if route.method == Method::DELETE && route.path.ends_with("/students/{student}") {
                    store
                        .join_class(&class.id, &class.student, "Back again")
                        .await
                        .unwrap();
                }
                // The extension the DELETE takes back is given before each call.
                if route.path.ends_with("/extension") {
                    let due = chrono::Utc::now() + chrono::Duration::days(30);
                    store
                        .set_extension(&class.id, &class.student, "", due, "admin:test")
                        .await
                        .unwrap();
                }
                // The score the DELETE removes is set before each call.
                if route.path.contains("/scores/") {
                    store
                        .set_override(
                            &class.id,
                            &class.student,
                            "safe-retry",
                            1,
                            3,
                            "seed",
                            "admin:test",
                        )
                        .await
                        .unwrap();
                }
                let answer = call(app, &route, &caller.token, class).await;
                let allowed = caller.allowed(index, route.need);
                let what = format!(
                    "{} {} as {} on class {}",
                    route.method,
                    route.path,
                    caller.label,
                    ["A", "B"][index]
                );
                if allowed {
                    assert!(
                        answer.status.is_success(),
                        "{what}: {} {}",
                        answer.status,
                        answer.text
                    );
                } else {
                    assert_eq!(
                        answer.status,
                        StatusCode::FORBIDDEN,
                        "{what}: {}",
                        answer.text
                    );
                    assert_eq!(answer.code(), ErrorCode::Forbidden, "{what}");
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, routes().len() * callers.len() * 2);
    lists_and_limits(app, &callers, &classes).await;
}

/// The class list, regrading every class, grading by API, the last owner and the audit log.
async fn lists_and_limits(app: &TestApp, callers: &[Caller], classes: &[Seeded; 2]) {
    for caller in callers {
        let listed = app.get("/api/classes", &As::grader(&caller.token)).await;
        assert_eq!(listed.status, StatusCode::OK, "{}", listed.text);
        let ids: Vec<&str> = listed
            .body
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap())
            .collect();
        let expected: Vec<&str> = classes
            .iter()
            .enumerate()
            .filter(|(i, _)| caller.admin || caller.roles[*i].is_some())
            .map(|(_, c)| c.id.as_str())
            .rev()
            .collect();
        assert_eq!(ids, expected, "the classes {} sees", caller.label);
        for class in listed.body.as_array().unwrap() {
            assert_eq!(
                class["owner"],
                if class["id"] == classes[0].id.as_str() {
                    "ana"
                } else {
                    "ben"
                }
            );
            let index = usize::from(class["id"] != classes[0].id.as_str());
            assert_eq!(
                class.get("role").and_then(Value::as_str),
                caller.roles[index],
                "{}",
                caller.label
            );
        }
        // Regrading every class's attempts and grading by API are an administrator's.
        let every = app
            .post(
                "/api/regrade",
                &As::grader(&caller.token),
                &json!({"scenario": "safe-retry"}),
            )
            .await;
        let graded = app
            .post("/api/grade", &As::grader(&caller.token), &json!([]))
            .await;
        for answer in [every, graded] {
            if caller.admin {
                assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
            } else {
                assert_eq!(
                    answer.status,
                    StatusCode::FORBIDDEN,
                    "{}: {}",
                    caller.label,
                    answer.text
                );
            }
        }
    }
    submissions_by_role(app, callers, classes).await;
    let ana = &callers[0].token;
    let class_a = &classes[0].id;
    // The last owner cannot be made less, nor removed.
    let demoted = app
        .put(
            &format!("/api/classes/{class_a}/staff/ana"),
            &As::grader(ana),
            &json!({"role": "ta"}),
        )
        .await;
    assert_eq!(demoted.status, StatusCode::FORBIDDEN, "{}", demoted.text);
    let removed = app
        .send(
            Method::DELETE,
            &format!("/api/classes/{class_a}/staff/ana"),
            &As::grader(ana),
            &[],
            None,
        )
        .await;
    assert_eq!(removed.status, StatusCode::FORBIDDEN, "{}", removed.text);
    // Once there is a second owner, the first may step down to TA.
    grant(app, ana, class_a, "tom", "owner").await;
    grant(app, ana, class_a, "ana", "ta").await;
    let staff = app
        .get(&format!("/api/classes/{class_a}/staff"), &As::grader(ana))
        .await;
    let roles: Vec<(String, String)> = staff
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["account"].as_str().unwrap().to_string(),
                m["role"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        roles,
        [
            ("tom".into(), "owner".into()),
            ("ana".into(), "ta".into()),
            ("val".into(), "viewer".into())
        ]
    );
    // An unknown account is no one to grant a role to.
    let nobody = app
        .put(
            &format!("/api/classes/{class_a}/staff/nobody"),
            &As::grader(&callers[2].token),
            &json!({"role": "ta"}),
        )
        .await;
    assert_eq!(
        nobody.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        nobody.text
    );
    // The audit log, read by the new owner, has every change, in order.
    let audit = app
        .get(
            &format!("/api/classes/{class_a}/audit"),
            &As::grader(&callers[2].token),
        )
        .await;
    assert_eq!(audit.status, StatusCode::OK, "{}", audit.text);
    let actions: Vec<(&str, &str)> = audit
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["actor"].as_str().unwrap(), e["action"].as_str().unwrap()))
        .collect();
    assert_eq!(actions.first(), Some(&("ana", "class_made")));
    for expected in [
        ("ana", "staff_granted"),
        ("ana", "class_changed"),
        ("admin:ops", "staff_removed"),
        ("admin:ops", "override_removed"),
        ("tom", "regraded"),
        ("ana", "staff_removed"),
    ] {
        assert!(actions.contains(&expected), "{expected:?} in {actions:?}");
    }
    assert_eq!(
        actions[actions.len() - 2..],
        [("ana", "staff_granted"), ("ana", "staff_granted")]
    );
    let details: Vec<&str> = audit
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["detail"].as_str().unwrap())
        .collect();
    assert!(details.contains(&"closed it"), "{details:?}");
    assert!(details.contains(&"gave ana the role ta"), "{details:?}");
    // Class B's log holds nothing of class A.
    let audit_b = app
        .get(
            &format!("/api/classes/{}/audit", classes[1].id),
            &As::grader(&callers[1].token),
        )
        .await;
    assert!(
        audit_b
            .body
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["actor"] != "tom" && e["actor"] != "ana"),
        "{}",
        audit_b.text
    );
    // Who is signed in says which account and what the token may do.
    let me = app
        .get("/api/instructor/session", &As::grader(&callers[4].token))
        .await;
    assert_eq!(
        me.body,
        json!({"name": "ana-reader", "account": "ana", "administrator": false, "read_only": true})
    );
    let me = app
        .get("/api/instructor/session", &As::grader(&callers[5].token))
        .await;
    assert_eq!(
        me.body,
        json!({"name": "ops", "administrator": true, "read_only": false})
    );
}

crate::on_both_databases!(every_instructor_route_answers_each_role, |db| {
    every_route_answers_each_role(&db.app().await).await;
});

/// `/api/submissions` with a token: an administrator's lists and reads every attempt and
/// records one for any student; a staff account reads and records only its classes' attempts.
async fn submissions_by_role(app: &TestApp, callers: &[Caller], classes: &[Seeded; 2]) {
    let (ana, ben, tom, admin) = (&callers[0], &callers[1], &callers[2], &callers[5]);
    for caller in callers {
        let listed = app
            .get("/api/submissions", &As::grader(&caller.token))
            .await;
        let expected = if caller.admin {
            StatusCode::OK
        } else {
            StatusCode::FORBIDDEN
        };
        assert_eq!(listed.status, expected, "{}: {}", caller.label, listed.text);
    }
    let attempt_a = format!("/api/submissions/{}", classes[0].attempt);
    for (caller, expected) in [
        (ana, StatusCode::OK),
        (tom, StatusCode::OK),
        (ben, StatusCode::FORBIDDEN),
        (admin, StatusCode::OK),
    ] {
        let read = app.get(&attempt_a, &As::grader(&caller.token)).await;
        assert_eq!(
            read.status, expected,
            "{} reads an attempt of A: {}",
            caller.label, read.text
        );
    }
    let record = |class: Option<&str>| {
        let mut body = json!({"scenario": "safe-retry", "design": failing_design(), "student": classes[0].student});
        if let Some(class) = class {
            body["class"] = json!(class);
        }
        body
    };
    for (caller, class, expected) in [
        (tom, Some(classes[0].id.as_str()), StatusCode::CREATED),
        (ben, Some(classes[0].id.as_str()), StatusCode::FORBIDDEN),
        (tom, None, StatusCode::FORBIDDEN),
        (admin, None, StatusCode::CREATED),
    ] {
        let made = app
            .post(
                "/api/submissions",
                &As::grader(&caller.token),
                &record(class),
            )
            .await;
        assert_eq!(
            made.status, expected,
            "{} records for {class:?}: {}",
            caller.label, made.text
        );
    }
}
