//! `rediss://` against a server with a certificate for `localhost` signed
//! by a test CA: trusted through `tlsrootcert`, refused without it (the
//! bundled roots do not know the CA) and refused for a host the
//! certificate does not name. A refusal is `Other` (retrying does not
//! mend it) and says what to check.

use cronslot_core::coord::{StateStore, StoreErrorKind};
use cronslot_redis::{RedisOptions, RedisRootCerts, parse_redis_location_with_env};
use cronslot_tests::redis::Server;

use crate::support::{block_on, open};

#[test]
fn tls_checks_the_chain_and_the_name() {
    let server = Server::start_with_tls();
    let ca = server.ca_file();
    let port = server.tls_port();

    let url = format!(
        "rediss://localhost:{port}/0?prefix=tls&tlsrootcert={}",
        ca.display()
    );
    let location = parse_redis_location_with_env(&url, |_| None).unwrap();
    assert!(location.tls());
    assert_eq!(location.root_certs(), &RedisRootCerts::File(ca.clone()));
    let store = block_on(open(&url, RedisOptions::default())).unwrap();
    assert!(block_on(store.get("nothing")).unwrap().is_none());
    assert_eq!(
        server.cli(&["GET", "{tls}:layout"]),
        cronslot_redis::STORE_LAYOUT_VERSION.to_string(),
        "written through the TLS connection"
    );

    // The bundled roots do not know the test CA.
    let e = block_on(open(
        &format!("rediss://localhost:{port}/0?prefix=tls"),
        RedisOptions::default(),
    ))
    .unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Other, "{e}");
    assert!(e.message().contains("certificate was refused"), "{e}");

    // The certificate names localhost, not 127.0.0.1.
    let e = block_on(open(
        &format!(
            "rediss://127.0.0.1:{port}/0?prefix=tls&tlsrootcert={}",
            ca.display()
        ),
        RedisOptions::default(),
    ))
    .unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Other, "{e}");
    assert!(e.message().contains("names the host"), "{e}");

    // A root file that cannot be read is refused before connecting.
    let e = block_on(open(
        &format!("rediss://localhost:{port}/0?prefix=tls&tlsrootcert=/nonexistent/ca.pem"),
        RedisOptions::default(),
    ))
    .unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Other, "{e}");
    assert!(
        e.message()
            .contains("cannot read tlsrootcert /nonexistent/ca.pem"),
        "{e}"
    );
}
