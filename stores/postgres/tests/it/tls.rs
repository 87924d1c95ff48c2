//! TLS as libpq's `sslmode` asks, against a server with a certificate for
//! `localhost` signed by a CA of its own (and not valid for `127.0.0.1`).

use cronslot_core::coord::StoreErrorKind;
use cronslot_postgres::PgOptions;
use cronslot_tests::postgres::{Server, unique};

use crate::support::{block_on, open};

#[test]
fn sslmodes() {
    let server = Server::start_with_tls();
    let ca = server.ca_file();
    let ca = ca.to_string_lossy();
    let url = |host: &str, mode: &str, extra: &str, app: &str| {
        format!(
            "postgres://postgres@{host}:{}/postgres?sslmode={mode}&schema=tls&application_name={app}{extra}",
            server.port
        )
    };
    let with_ca = format!("&sslrootcert={ca}");
    // (host, sslmode, extra parameters, encrypted?)
    let accepted = [
        ("127.0.0.1", "disable", "", false),
        ("127.0.0.1", "prefer", "", true),
        ("127.0.0.1", "require", "", true),
        // `require` with roots checks the chain (not the name), as libpq.
        ("127.0.0.1", "require", with_ca.as_str(), true),
        ("127.0.0.1", "verify-ca", with_ca.as_str(), true),
        ("localhost", "verify-full", with_ca.as_str(), true),
    ];
    let mut open_stores = Vec::new();
    for (host, mode, extra, encrypted) in accepted {
        let app = unique("tls");
        let store = block_on(open(&url(host, mode, extra, &app), PgOptions::default()))
            .unwrap_or_else(|e| panic!("{host} sslmode={mode}{extra}: {e}"));
        let ssl = server.psql(
            "postgres",
            &format!(
                "SELECT bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
                 WHERE a.application_name = '{app}'"
            ),
        );
        assert_eq!(
            ssl,
            if encrypted { "t" } else { "f" },
            "{host} sslmode={mode}{extra}"
        );
        open_stores.push(store);
    }

    let refused = [
        // The certificate does not name 127.0.0.1.
        ("127.0.0.1", "verify-full", with_ca.as_str(), "certificate"),
        // The bundled public roots do not include the test CA.
        ("localhost", "verify-full", "", "certificate"),
        ("localhost", "verify-ca", "", "certificate"),
        (
            "localhost",
            "verify-full",
            "&sslrootcert=/nonexistent/ca.pem",
            "cannot read the root certificates /nonexistent/ca.pem",
        ),
    ];
    for (host, mode, extra, expected) in refused {
        let e = block_on(open(
            &url(host, mode, extra, "refused"),
            PgOptions::default(),
        ))
        .expect_err(&format!("{host} sslmode={mode}{extra} must be refused"));
        assert_eq!(e.kind(), &StoreErrorKind::Other, "{e}");
        assert!(e.message().contains(expected), "{host} {mode}{extra}: {e}");
        assert!(e.message().contains("sslrootcert"), "{e}");
    }
}
