//! Staff roles from a learning platform, on SQLite and PostgreSQL, against the test platform:
//! the course's first Instructor owns its class and opens its dashboard with the launch's
//! session, no token pasted; a second Instructor, a TeachingAssistant and a ContentDeveloper
//! are TAs; a Learner gets no staff role; the owner can make a TA an owner. A score set by
//! hand is the one grade passback sends.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};
use server::Store;

use crate::common::{As, TestApp};
use crate::lti::{launch, login, registered, session_cookie, TestPlatform, DEPLOYMENT, KID, LTI};

const MEMBERSHIP: &str = "http://purl.imsglobal.org/vocab/lis/v2/membership";

/// A launch of `sub` with the LTI roles `roles`: the session cookie it leaves.
async fn launched(app: &TestApp, platform: &TestPlatform, sub: &str, roles: &[&str]) -> String {
    let started = login(app, platform).await;
    let mut claims = platform.claims(&started.nonce, sub);
    claims[format!("{LTI}roles")] = json!(roles
        .iter()
        .map(|r| format!("{MEMBERSHIP}{r}"))
        .collect::<Vec<_>>());
    let answer = launch(app, &platform.sign(&claims, KID, &platform.key), &started).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.text);
    session_cookie(&answer)
}

/// The caller's role in `class` as `GET /api/classes/{class}` says it, or the status.
async fn role_in(app: &TestApp, cookie: &str, class: &str) -> Result<Value, StatusCode> {
    let answer = app
        .get(&format!("/api/classes/{class}"), &As::student(cookie))
        .await;
    if answer.status != StatusCode::OK {
        return Err(answer.status);
    }
    Ok(answer.body["role"].clone())
}

async fn staff_launches_get_their_roles(store: Store) {
    let (platform, app) = registered(&store).await;
    let learner = launched(&app, &platform, "learner-1", &["#Learner"]).await;
    let class = store
        .lti_course_class(&platform.issuer, DEPLOYMENT, "course-1")
        .await
        .unwrap()
        .expect("the course's class");
    // A learner is no staff: every instructor route is refused.
    assert_eq!(
        role_in(&app, &learner, &class).await,
        Err(StatusCode::UNAUTHORIZED)
    );
    let me = app
        .get("/api/instructor/session", &As::student(&learner))
        .await;
    assert_eq!(me.status, StatusCode::UNAUTHORIZED, "{}", me.text);

    // The first Instructor owns the class, and the launch's session opens its dashboard.
    let teacher = launched(&app, &platform, "teacher-1", &["#Instructor"]).await;
    assert_eq!(role_in(&app, &teacher, &class).await, Ok(json!("owner")));
    let matrix = app
        .get(
            &format!("/api/classes/{class}/matrix"),
            &As::student(&teacher),
        )
        .await;
    assert_eq!(matrix.status, StatusCode::OK, "{}", matrix.text);
    let listed = app.get("/api/classes", &As::student(&teacher)).await;
    let ids: Vec<&str> = listed
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [class.as_str()]);
    let me = app
        .get("/api/instructor/session", &As::student(&teacher))
        .await;
    assert_eq!(me.body["administrator"], false, "{}", me.text);
    let teacher_account = me.body["account"].as_str().unwrap().to_string();
    assert!(teacher_account.starts_with("lti-s-"), "{teacher_account}");
    assert_eq!(listed.body[0]["owner"], teacher_account.as_str());

    // A second Instructor, a TeachingAssistant (beside the principal role Instructor, as
    // some platforms send it) and a ContentDeveloper are TAs: they may regrade, not close.
    let second = launched(&app, &platform, "teacher-2", &["#Instructor"]).await;
    let assistant = launched(
        &app,
        &platform,
        "ta-1",
        &["#Instructor", "/Instructor#TeachingAssistant"],
    )
    .await;
    let developer = launched(&app, &platform, "dev-1", &["#ContentDeveloper"]).await;
    for cookie in [&second, &assistant, &developer] {
        assert_eq!(role_in(&app, cookie, &class).await, Ok(json!("ta")));
        let close = app
            .send(
                Method::POST,
                &format!("/api/classes/{class}/close"),
                &As::student(cookie),
                &[],
                None,
            )
            .await;
        assert_eq!(close.status, StatusCode::FORBIDDEN, "{}", close.text);
    }
    // The learner is still no staff, and launching again changes nothing.
    let learner = launched(&app, &platform, "learner-1", &["#Learner"]).await;
    assert_eq!(
        role_in(&app, &learner, &class).await,
        Err(StatusCode::UNAUTHORIZED)
    );

    // The owner makes the second Instructor an owner; a later launch keeps that role.
    let second_account = app
        .get("/api/instructor/session", &As::student(&second))
        .await
        .body["account"]
        .as_str()
        .unwrap()
        .to_string();
    let made = app
        .put(
            &format!("/api/classes/{class}/staff/{second_account}"),
            &As::student(&teacher),
            &json!({"role": "owner"}),
        )
        .await;
    assert_eq!(made.status, StatusCode::OK, "{}", made.text);
    let second = launched(&app, &platform, "teacher-2", &["#Instructor"]).await;
    assert_eq!(role_in(&app, &second, &class).await, Ok(json!("owner")));
    let closed = app
        .send(
            Method::POST,
            &format!("/api/classes/{class}/close"),
            &As::student(&second),
            &[],
            None,
        )
        .await;
    assert_eq!(closed.status, StatusCode::OK, "{}", closed.text);

    // The audit log says who gave each role.
    let audit = app
        .get(
            &format!("/api/classes/{class}/audit"),
            &As::student(&teacher),
        )
        .await;
    let by_lti = audit
        .body
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["actor"] == "lti")
        .count();
    assert_eq!(by_lti, 4, "{}", audit.text);
}

crate::on_both_databases!(staff_launches_get_their_roles, |db| {
    staff_launches_get_their_roles(db.store().await).await;
});

/// A score set by hand is what grade passback sends; removing it sends the computed one again.
#[tokio::test]
async fn a_score_set_by_hand_is_the_score_passback_sends() {
    let dir = crate::common::TempDir::new("lti-override");
    let store = Store::connect(&dir.sqlite_url()).await.unwrap();
    let (platform, app) = registered(&store).await;
    let jwks = app.get("/lti/jwks", &As::nobody()).await.body;
    *platform.grades.tool_keys.lock().unwrap() = Some(serde_json::from_value(jwks).unwrap());
    let started = login(&app, &platform).await;
    let mut claims = platform.claims(&started.nonce, "learner-7");
    claims["https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"] = json!({
        "scope": [server::lti::grades::SCORE_SCOPE],
        "lineitem": format!("{}/lineitems/1?type=score", platform.issuer),
    });
    let answer = launch(&app, &platform.sign(&claims, KID, &platform.key), &started).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.text);
    let cookie = session_cookie(&answer);
    let student = app.get("/api/session", &As::student(&cookie)).await.body["student"]
        .as_str()
        .unwrap()
        .to_string();
    let class = store
        .lti_course_class(&platform.issuer, DEPLOYMENT, "course-1")
        .await
        .unwrap()
        .unwrap();
    let attempt = app
        .post(
            "/api/submissions",
            &As::student(&cookie),
            &json!({"scenario": "safe-retry", "class": class, "design": crate::common::passing_design("safe-retry")}),
        )
        .await;
    assert_eq!(attempt.status, StatusCode::CREATED, "{}", attempt.text);
    let max = attempt.body["max_score"].clone();
    let send = |seconds: i64| {
        let (store, app) = (store.clone(), &app);
        async move {
            server::lti::grades::send_due(
                &store,
                app.state.outbound(),
                chrono::Utc::now() + chrono::Duration::seconds(seconds),
            )
            .await
            .unwrap()
        }
    };
    assert_eq!(send(0).await.sent, 1);
    let token = app.grader_token("teacher").await;
    let path = format!("/api/classes/{class}/students/{student}/scores/safe-retry");
    let set = app
        .put(
            &path,
            &As::grader(&token),
            &json!({"score": 1, "reason": "copied from a neighbour"}),
        )
        .await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.text);
    assert_eq!(send(5).await.sent, 1);
    let removed = app
        .send(Method::DELETE, &path, &As::grader(&token), &[], None)
        .await;
    assert_eq!(removed.status, StatusCode::NO_CONTENT, "{}", removed.text);
    assert_eq!(send(10).await.sent, 1);
    assert_eq!(send(20).await.sent, 0, "nothing is sent twice");
    let given: Vec<Value> = platform
        .grades
        .accepted
        .lock()
        .unwrap()
        .iter()
        .map(|s| s["scoreGiven"].clone())
        .collect();
    assert_eq!(given, [max.clone(), json!(1), max]);
}

/// Grade passback sends the best on-time score: an attempt after the due date is recorded
/// (the class accepts late attempts) but does not count.
#[tokio::test]
async fn passback_sends_the_best_on_time_score() {
    let dir = crate::common::TempDir::new("lti-on-time");
    let store = Store::connect(&dir.sqlite_url()).await.unwrap();
    let (platform, app) = registered(&store).await;
    let jwks = app.get("/lti/jwks", &As::nobody()).await.body;
    *platform.grades.tool_keys.lock().unwrap() = Some(serde_json::from_value(jwks).unwrap());
    let started = login(&app, &platform).await;
    let mut claims = platform.claims(&started.nonce, "learner-8");
    claims["https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"] = json!({
        "scope": [server::lti::grades::SCORE_SCOPE],
        "lineitem": format!("{}/lineitems/1?type=score", platform.issuer),
    });
    let answer = launch(&app, &platform.sign(&claims, KID, &platform.key), &started).await;
    let cookie = session_cookie(&answer);
    let class = store
        .lti_course_class(&platform.issuer, DEPLOYMENT, "course-1")
        .await
        .unwrap()
        .unwrap();
    let submit = |design: Value| {
        let body = json!({"scenario": "safe-retry", "class": class, "design": design});
        let (app, cookie) = (&app, cookie.clone());
        async move {
            let a = app
                .post("/api/submissions", &As::student(&cookie), &body)
                .await;
            assert_eq!(a.status, StatusCode::CREATED, "{}", a.text);
            a.body
        }
    };
    let on_time = submit(crate::common::failing_design()).await;
    let token = app.grader_token("teacher").await;
    let due = chrono::Utc::now().to_rfc3339();
    let set = app
        .put(
            &format!("/api/classes/{class}/deadlines"),
            &As::grader(&token),
            &json!({"due_at": due}),
        )
        .await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.text);
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let late = submit(crate::common::passing_design("safe-retry")).await;
    assert_eq!(late["late"], true);
    let round = server::lti::grades::send_due(&store, app.state.outbound(), chrono::Utc::now())
        .await
        .unwrap();
    assert_eq!(round.sent, 1);
    let accepted = platform.grades.accepted.lock().unwrap().clone();
    assert_eq!(
        accepted[0]["scoreGiven"], on_time["score"],
        "the on-time best, not the late pass"
    );
    assert_ne!(on_time["score"], late["score"]);
}

/// A line item's `endDateTime` becomes the scenario's due date in the course's class, unless
/// staff set one.
#[tokio::test]
async fn a_line_items_end_date_is_the_due_date_unless_staff_set_one() {
    let dir = crate::common::TempDir::new("lti-end-date");
    let store = Store::connect(&dir.sqlite_url()).await.unwrap();
    let (platform, app) = registered(&store).await;
    let jwks = app.get("/lti/jwks", &As::nobody()).await.body;
    *platform.grades.tool_keys.lock().unwrap() = Some(serde_json::from_value(jwks).unwrap());
    let launch_with = |end: &'static str| {
        let (app, platform) = (&app, &platform);
        async move {
            *platform.grades.end_date.lock().unwrap() = Some(end.to_string());
            let started = login(app, platform).await;
            let mut claims = platform.claims(&started.nonce, "learner-9");
            claims["https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"] = json!({
                "scope": [server::lti::grades::SCORE_SCOPE, server::lti::grades::LINEITEM_READONLY_SCOPE],
                "lineitem": format!("{}/lineitems/7", platform.issuer),
            });
            let answer = launch(app, &platform.sign(&claims, KID, &platform.key), &started).await;
            assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.text);
        }
    };
    launch_with("2026-12-20T17:00:00Z").await;
    let class = store
        .lti_course_class(&platform.issuer, DEPLOYMENT, "course-1")
        .await
        .unwrap()
        .unwrap();
    let token = app.grader_token("teacher").await;
    let deadlines = format!("/api/classes/{class}/deadlines");
    let listed = app.get(&deadlines, &As::grader(&token)).await;
    assert_eq!(
        listed.body["scenarios"],
        json!([{"scenario": "safe-retry", "due_at": "2026-12-20T17:00:00.000Z", "source": "platform"}])
    );
    // The platform moves it: the next launch follows.
    launch_with("2026-12-21T17:00:00Z").await;
    let listed = app.get(&deadlines, &As::grader(&token)).await;
    assert_eq!(
        listed.body["scenarios"][0]["due_at"],
        "2026-12-21T17:00:00.000Z"
    );
    // Staff set one: the platform's no longer counts.
    let set = app
        .put(
            &deadlines,
            &As::grader(&token),
            &json!({"scenarios": {"safe-retry": "2026-12-24T12:00:00Z"}}),
        )
        .await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.text);
    launch_with("2026-12-22T17:00:00Z").await;
    let listed = app.get(&deadlines, &As::grader(&token)).await;
    assert_eq!(
        listed.body["scenarios"],
        json!([{"scenario": "safe-retry", "due_at": "2026-12-24T12:00:00.000Z", "source": "staff"}])
    );
}

/// Two learners the platform gives one name are told apart in the class.
#[tokio::test]
async fn two_learners_of_one_name_are_told_apart() {
    let dir = crate::common::TempDir::new("lti-same-name");
    let store = Store::connect(&dir.sqlite_url()).await.unwrap();
    let (platform, app) = registered(&store).await;
    launched(&app, &platform, "learner-1", &["#Learner"]).await;
    launched(&app, &platform, "learner-2", &["#Learner"]).await;
    let class = store
        .lti_course_class(&platform.issuer, DEPLOYMENT, "course-1")
        .await
        .unwrap()
        .unwrap();
    let mut names: Vec<String> = store
        .members(&class)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.display_name)
        .collect();
    names.sort();
    assert_eq!(names, ["Ada Lovelace", "Ada Lovelace (2)"]);
}
