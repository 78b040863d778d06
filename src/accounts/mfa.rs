//! The second factor: TOTP (RFC 6238, SHA-1, 6 digits, 30-second steps,
//! one step either side) with ten recovery codes, enrolled by the user and
//! reset by another admin or the host. The secret is sealed with AES-256-GCM
//! under a key derived from the audit key (outside the database), bound to
//! its user; recovery codes are kept as hashes.

use super::{
    AGENT_CHARS, ANONYMOUS, Accounts, Actor, TRIED_CHARS, TxError, clip, end_reason, internal,
    retrying,
};
use crate::store::{audit, throttle, user_mfa, users};
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use app::error::AppError;
use app::mfa::{Enrolment, MfaStatus, Pending};
use app::ssr::{LoginOutcome, Peer, SignedIn};
use app::types::{Role, User};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rand::{Rng, RngCore};
use serde_json::json;
use sha2::{Digest, Sha256};
use totp_rs::{Algorithm, TOTP};

/// A password's right answer waits this long for its second step.
const PENDING_US: i64 = 5 * 60 * 1_000_000;
/// A new enrolment's secret (160 bits, as RFC 4226 recommends).
const SECRET_BYTES: usize = 20;
const STEP_SECS: i64 = 30;
const RECOVERY_CODES: usize = 10;
/// Crockford's base32: no I, L, O, U to misread.
const RECOVERY_ALPHABET: &[u8] = b"0123456789abcdefghjkmnpqrstvwxyz";
/// 16 characters of 32: 80 random bits.
const RECOVERY_CHARS: usize = 16;
const ISSUER: &str = "Reckon";
/// What the derived key is for (changing it makes every sealed secret
/// unreadable).
const SEAL_LABEL: &str = "mfa secret";

impl Accounts {
    /// Whether a user of `role` signs in only with a second factor.
    pub fn mfa_required(&self, role: Role) -> bool {
        self.sign_in.mfa.requires(role.as_str())
    }

    async fn mfa_row(&self, user_id: &str) -> Result<Option<user_mfa::Row>, AppError> {
        user_mfa::find(&self.db.pool, user_id)
            .await
            .map_err(internal)
    }

    async fn enrolled(&self, user_id: &str) -> Result<bool, AppError> {
        Ok(self
            .mfa_row(user_id)
            .await?
            .is_some_and(|r| r.confirmed_at.is_some()))
    }

    /// After a right password: a session, or the second step first for a
    /// user who has a second factor or whose role needs one. The username's
    /// failures are not cleared until the second step is done, so a known
    /// password buys no more guesses at the code.
    pub(super) async fn after_password(
        &self,
        user: User,
        peer: &Peer,
        user_key: &str,
    ) -> Result<LoginOutcome, AppError> {
        let enrolled = self.enrolled(&user.id).await?;
        if !enrolled && !self.mfa_required(user.role) {
            throttle::clear(&self.db.pool, user_key)
                .await
                .map_err(internal)?;
            let session_id = self.open_session(&user, peer).await?;
            self.metrics.login("success");
            tracing::info!(username = %user.username, addr = %peer.addr, "signed in");
            return Ok(LoginOutcome::SignedIn(Box::new(SignedIn {
                user,
                session_id,
            })));
        }
        throttle::release(&self.db.pool, user_key)
            .await
            .map_err(internal)?;
        tracing::info!(username = %user.username, addr = %peer.addr, enrol = !enrolled,
            "password right: the second factor next");
        Ok(LoginOutcome::SecondFactor(Pending {
            user_id: user.id,
            enrol: !enrolled,
            since: self.now(),
        }))
    }

    /// The user of a pending sign-in while it may go on: recent, its user
    /// enabled, and its step still the one needed (a second factor reset
    /// or enrolled meanwhile ends it).
    pub async fn pending_user(&self, pending: &Pending) -> Result<User, AppError> {
        if self.now() - pending.since > PENDING_US {
            return Err(AppError::Unauthenticated);
        }
        let user = self
            .user(&pending.user_id)
            .await?
            .filter(|u| !u.disabled)
            .ok_or(AppError::Unauthenticated)?;
        if self.enrolled(&user.id).await? == pending.enrol {
            return Err(AppError::Unauthenticated);
        }
        Ok(user)
    }

    /// The second step: a TOTP code of this step or the next or last one,
    /// never one of a step already used, or an unused recovery code. The
    /// attempt counts against the username and the address as a password
    /// does; a wrong one is audited, a right one opens the session.
    pub async fn second_factor(
        &self,
        pending: &Pending,
        code: &str,
        peer: &Peer,
    ) -> Result<SignedIn, AppError> {
        let user = self.pending_user(pending).await?;
        let (user_key, addr_key) = self.reserve_attempt(&user.username, peer).await?;
        let pool = &self.db.pool;
        let factor = match self.check_code(&user, code).await? {
            Ok(factor) => factor,
            Err(why) => {
                self.metrics.login("bad_credentials");
                tracing::warn!(username = %user.username, addr = %peer.addr, why, "second factor refused");
                self.login_failed(&user.username, peer, why).await?;
                return Err(AppError::WrongCode);
            }
        };
        throttle::clear(pool, &user_key).await.map_err(internal)?;
        throttle::release(pool, &addr_key).await.map_err(internal)?;
        let session_id = self.open_session_with(&user, peer, Some(factor)).await?;
        self.metrics.login("success");
        tracing::info!(username = %user.username, addr = %peer.addr, factor, "signed in");
        Ok(SignedIn { user, session_id })
    }

    /// Which factor `code` is, if right: "totp" (its step now taken) or
    /// "recovery" (the code now used, with its audit entry); else why not.
    async fn check_code(
        &self,
        user: &User,
        code: &str,
    ) -> Result<Result<&'static str, &'static str>, AppError> {
        let code = normalise(code);
        if code.len() == RECOVERY_CHARS {
            return Ok(match self.use_recovery(user, &code).await? {
                true => Ok("recovery"),
                false => Err("wrong_recovery_code"),
            });
        }
        Ok(match self.take_totp(user, &code).await? {
            Some(true) => Ok("totp"),
            Some(false) => Err("replayed_code"),
            None => Err("wrong_code"),
        })
    }

    /// A TOTP code checked against the user's confirmed secret: `None`
    /// when wrong, `Some(false)` when right but of a step already used.
    async fn take_totp(&self, user: &User, code: &str) -> Result<Option<bool>, AppError> {
        let Some(row) = self
            .mfa_row(&user.id)
            .await?
            .filter(|r| r.confirmed_at.is_some())
        else {
            return Ok(None);
        };
        let secret = self.open_secret(&user.id, &row)?;
        let Some(step) = matching_step(&secret, &user.username, code, self.now()) else {
            return Ok(None);
        };
        let taken = user_mfa::take_step(&self.db.pool, &user.id, step)
            .await
            .map_err(internal)?;
        Ok(Some(taken > 0))
    }

    /// Uses a recovery code, with its audit entry (how many are left).
    async fn use_recovery(&self, user: &User, code: &str) -> Result<bool, AppError> {
        let hash = recovery_hash(&user.id, code);
        retrying(|| async {
            let now = self.now();
            let mut tx = self.db.begin_write().await?;
            if user_mfa::use_recovery(&mut *tx, &user.id, &hash, now).await? == 0 {
                return Ok(false);
            }
            let left = user_mfa::recovery_left(&mut *tx, &user.id).await?;
            let entry = audit::Entry {
                actor: user.username.clone(),
                action: "user.mfa_recovery_used",
                object_type: "user",
                object_id: user.id.clone(),
                before: None,
                after: Some(json!({ "recovery_codes_left": left })),
            };
            audit::append(&mut tx, &self.db.audit, &entry, now).await?;
            tx.commit().await?;
            Ok(true)
        })
        .await
    }

    /// A failed sign-in in the audit log, a password's or a second
    /// factor's: the name tried, the address, the browser and why.
    pub(super) async fn login_failed(
        &self,
        username: &str,
        peer: &Peer,
        why: &str,
    ) -> Result<(), AppError> {
        let tried = clip(username, TRIED_CHARS);
        self.record(audit::Entry {
            actor: ANONYMOUS.into(),
            action: "user.login_failed",
            object_type: "username",
            object_id: tried.clone(),
            before: None,
            after: Some(json!({
                "username": tried,
                "address": peer.addr.to_string(),
                "agent": clip(&peer.agent, AGENT_CHARS),
                "reason": why,
            })),
        })
        .await
    }

    /// The session of a pending sign-in that has just enrolled.
    pub async fn enrolled_sign_in(
        &self,
        pending: &Pending,
        peer: &Peer,
    ) -> Result<SignedIn, AppError> {
        if !pending.enrol || self.now() - pending.since > PENDING_US {
            return Err(AppError::Unauthenticated);
        }
        let user = self
            .user(&pending.user_id)
            .await?
            .filter(|u| !u.disabled)
            .ok_or(AppError::Unauthenticated)?;
        if !self.enrolled(&user.id).await? {
            return Err(AppError::Unauthenticated);
        }
        throttle::clear(&self.db.pool, &format!("user:{}", user.username))
            .await
            .map_err(internal)?;
        let session_id = self
            .open_session_with(&user, peer, Some("enrolled"))
            .await?;
        self.metrics.login("success");
        Ok(SignedIn { user, session_id })
    }

    pub async fn mfa_status(&self, user: &User) -> Result<MfaStatus, AppError> {
        let enrolled = self.enrolled(&user.id).await?;
        let recovery_left = user_mfa::recovery_left(&self.db.pool, &user.id)
            .await
            .map_err(internal)?;
        Ok(MfaStatus {
            enrolled,
            required: self.mfa_required(user.role),
            recovery_left: if enrolled { recovery_left } else { 0 },
        })
    }

    /// A new secret, sealed and stored unconfirmed (replacing one begun
    /// before); refused once a second factor is confirmed.
    pub async fn mfa_begin(&self, user: &User) -> Result<Enrolment, AppError> {
        let mut secret = vec![0u8; SECRET_BYTES];
        rand::rngs::OsRng.fill_bytes(&mut secret);
        let (sealed, key_id) = self.seal_secret(&user.id, &secret)?;
        let begun = user_mfa::begin(&self.db.pool, &user.id, &sealed, &key_id, self.now())
            .await
            .map_err(internal)?;
        if begun == 0 {
            return Err(already_enrolled());
        }
        let totp = totp(&secret, &user.username).map_err(internal)?;
        let uri = totp.get_url();
        let svg = qrcode::QrCode::new(uri.as_bytes())
            .map_err(internal)?
            .render::<qrcode::render::svg::Color>()
            .min_dimensions(200, 200)
            .build();
        Ok(Enrolment {
            secret: totp.get_secret_base32(),
            uri,
            qr: format!("data:image/svg+xml;base64,{}", STANDARD.encode(svg)),
        })
    }

    /// Confirms the enrolment begun with a current code (whose step counts
    /// as used); new recovery codes, returned this once.
    pub async fn mfa_confirm(&self, user: &User, code: &str) -> Result<Vec<String>, AppError> {
        let row = self
            .mfa_row(&user.id)
            .await?
            .ok_or_else(|| AppError::Invalid {
                detail: "no enrolment begun: open the page again".into(),
            })?;
        if row.confirmed_at.is_some() {
            return Err(already_enrolled());
        }
        let secret = self.open_secret(&user.id, &row)?;
        let step = matching_step(&secret, &user.username, &normalise(code), self.now())
            .ok_or(AppError::WrongCode)?;
        let codes = recovery_codes();
        let hashes: Vec<String> = codes
            .iter()
            .map(|c| recovery_hash(&user.id, &normalise(c)))
            .collect();
        retrying(|| async {
            let now = self.now();
            let mut tx = self.db.begin_write().await?;
            if user_mfa::confirm(&mut *tx, &user.id, &row.secret, step, now).await? == 0 {
                // Another enrolment began or was confirmed meanwhile.
                return Err(TxError::App(AppError::Invalid {
                    detail: "the enrolment changed meanwhile: open the page again".into(),
                }));
            }
            user_mfa::replace_recovery(&mut tx, &user.id, &hashes, now).await?;
            let entry = audit::Entry {
                actor: user.username.clone(),
                action: "user.mfa_enrol",
                object_type: "user",
                object_id: user.id.clone(),
                before: Some(json!({ "mfa": false })),
                after: Some(json!({ "mfa": "totp", "recovery_codes": RECOVERY_CODES })),
            };
            audit::append(&mut tx, &self.db.audit, &entry, now).await?;
            tx.commit().await?;
            Ok(())
        })
        .await?;
        tracing::info!(username = %user.username, "second factor enrolled");
        Ok(codes)
    }

    /// New recovery codes for a current TOTP code (its step then used).
    /// Counted against the lock-out as a sign-in is: a stolen session must
    /// not guess its way to codes of its own.
    pub async fn mfa_recovery_codes(
        &self,
        user: &User,
        code: &str,
        peer: &Peer,
    ) -> Result<Vec<String>, AppError> {
        let (user_key, addr_key) = self.reserve_attempt(&user.username, peer).await?;
        let pool = &self.db.pool;
        if self.take_totp(user, &normalise(code)).await? != Some(true) {
            self.login_failed(&user.username, peer, "wrong_code")
                .await?;
            return Err(AppError::WrongCode);
        }
        throttle::clear(pool, &user_key).await.map_err(internal)?;
        throttle::release(pool, &addr_key).await.map_err(internal)?;
        let codes = recovery_codes();
        let hashes: Vec<String> = codes
            .iter()
            .map(|c| recovery_hash(&user.id, &normalise(c)))
            .collect();
        retrying(|| async {
            let now = self.now();
            let mut tx = self.db.begin_write().await?;
            user_mfa::replace_recovery(&mut tx, &user.id, &hashes, now).await?;
            let entry = audit::Entry {
                actor: user.username.clone(),
                action: "user.mfa_recovery_codes",
                object_type: "user",
                object_id: user.id.clone(),
                before: None,
                after: Some(json!({ "recovery_codes": RECOVERY_CODES })),
            };
            audit::append(&mut tx, &self.db.audit, &entry, now).await?;
            tx.commit().await?;
            Ok(())
        })
        .await?;
        Ok(codes)
    }

    /// Removes a user's second factor and ends every session of theirs; at
    /// their next sign-in they enrol again if their role needs it. No one
    /// resets their own from the console (it would let a stolen session
    /// take the account over); the host (`reckon user mfa-reset`) may.
    pub async fn mfa_reset(&self, actor: &Actor, user_id: &str) -> Result<(), AppError> {
        if actor.user_id.as_deref() == Some(user_id) {
            return Err(AppError::OwnSecondFactor);
        }
        retrying(|| async {
            let now = self.now();
            let mut tx = self.db.begin_write().await?;
            let user = users::by_id(&mut *tx, user_id)
                .await?
                .ok_or(AppError::NotFound)?;
            if !user_mfa::remove(&mut tx, user_id).await? {
                return Err(TxError::App(AppError::Invalid {
                    detail: format!("{} has no second factor", user.username),
                }));
            }
            let entry = audit::Entry {
                actor: actor.name.clone(),
                action: "user.mfa_reset",
                object_type: "user",
                object_id: user_id.to_owned(),
                before: Some(json!({ "mfa": "totp" })),
                after: Some(json!({ "mfa": false })),
            };
            audit::append(&mut tx, &self.db.audit, &entry, now).await?;
            self.end_sessions_in(&mut tx, actor, user_id, end_reason::MFA_RESET)
                .await?;
            tx.commit().await?;
            tracing::info!(actor = %actor.name, user = %user.username, "second factor reset");
            Ok(())
        })
        .await
    }

    /// The users' list, each marked whether they have a second factor.
    pub(super) async fn mark_enrolled(&self, mut list: Vec<User>) -> Result<Vec<User>, AppError> {
        let enrolled = user_mfa::enrolled_ids(&self.db.pool)
            .await
            .map_err(internal)?;
        for user in &mut list {
            user.mfa = enrolled.contains(&user.id);
        }
        Ok(list)
    }

    /// The secret sealed under the current key, bound to its user: the
    /// text stored (base64 of nonce and ciphertext) and the key's id.
    fn seal_secret(&self, user_id: &str, secret: &[u8]) -> Result<(String, String), AppError> {
        let key = self
            .db
            .audit
            .signing()
            .ok_or_else(|| internal("no audit key loaded to seal a second factor with"))?;
        let cipher = Aes256Gcm::new_from_slice(&key.derive(SEAL_LABEL)).map_err(internal)?;
        let mut nonce = [0u8; 12];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let sealed = cipher
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: secret,
                    aad: user_id.as_bytes(),
                },
            )
            .map_err(internal)?;
        let mut text = nonce.to_vec();
        text.extend_from_slice(&sealed);
        Ok((STANDARD.encode(text), key.id.clone()))
    }

    fn open_secret(&self, user_id: &str, row: &user_mfa::Row) -> Result<Vec<u8>, AppError> {
        let key = self.db.audit.by_id(&row.key_id).ok_or_else(|| {
            internal(format!(
                "the audit key {} that sealed this second factor is not loaded",
                row.key_id
            ))
        })?;
        let bytes = STANDARD.decode(&row.secret).map_err(internal)?;
        if bytes.len() < 12 {
            return Err(internal("a sealed second factor too short"));
        }
        let (nonce, sealed) = bytes.split_at(12);
        let cipher = Aes256Gcm::new_from_slice(&key.derive(SEAL_LABEL)).map_err(internal)?;
        cipher
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: sealed,
                    aad: user_id.as_bytes(),
                },
            )
            .map_err(|_| internal("a sealed second factor does not open"))
    }

    /// A user's second factor for the host: enrolled, recovery codes left.
    pub async fn mfa_of(&self, username: &str) -> Result<(User, MfaStatus), AppError> {
        let user = self.by_username(username).await?;
        let status = self.mfa_status(&user).await?;
        Ok((user, status))
    }
}

fn already_enrolled() -> AppError {
    AppError::Invalid {
        detail: "a second factor is already set up".into(),
    }
}

fn totp(secret: &[u8], username: &str) -> Result<TOTP, totp_rs::TotpUrlError> {
    TOTP::new(
        Algorithm::SHA1,
        6,
        1,
        STEP_SECS as u64,
        secret.to_vec(),
        Some(ISSUER.into()),
        username.into(),
    )
}

/// The time step (of `now`'s, or one either side) whose code `code` is.
fn matching_step(secret: &[u8], username: &str, code: &str, now_us: i64) -> Option<i64> {
    if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let totp = totp(secret, username).ok()?;
    let now = now_us.div_euclid(1_000_000).div_euclid(STEP_SECS);
    [now, now - 1, now + 1].into_iter().find(|step| {
        let expected = totp.generate((step * STEP_SECS) as u64);
        // Compared in constant time, so timing tells nothing of the code.
        expected
            .bytes()
            .zip(code.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    })
}

/// A code as typed: no spaces or dashes, lower case, and Crockford's
/// misreadings (o for 0, i and l for 1) read as meant.
fn normalise(code: &str) -> String {
    code.chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .map(|c| match c.to_ascii_lowercase() {
            'o' => '0',
            'i' | 'l' => '1',
            c => c,
        })
        .collect()
}

/// Ten new recovery codes, as shown: `xxxx-xxxx-xxxx-xxxx`.
fn recovery_codes() -> Vec<String> {
    let mut rng = rand::rngs::OsRng;
    (0..RECOVERY_CODES)
        .map(|_| {
            let chars: Vec<char> = (0..RECOVERY_CHARS)
                .map(|_| RECOVERY_ALPHABET[rng.gen_range(0..RECOVERY_ALPHABET.len())] as char)
                .collect();
            chars
                .chunks(4)
                .map(|c| c.iter().collect::<String>())
                .collect::<Vec<_>>()
                .join("-")
        })
        .collect()
}

/// What is stored of a recovery code: bound to its user, so the same code
/// of two users is two hashes.
fn recovery_hash(user_id: &str, code: &str) -> String {
    let digest = Sha256::new()
        .chain_update(b"reckon recovery code\0")
        .chain_update(user_id.as_bytes())
        .chain_update(b"\0")
        .chain_update(code.as_bytes())
        .finalize();
    hex::encode(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_matches_its_step_and_the_ones_either_side_only() {
        let secret = b"12345678901234567890";
        let t = totp(secret, "ann").unwrap();
        let now_us = 1_700_000_000 * 1_000_000;
        let step = 1_700_000_000 / STEP_SECS;
        for d in -1..=1 {
            let code = t.generate(((step + d) * STEP_SECS) as u64);
            assert_eq!(matching_step(secret, "ann", &code, now_us), Some(step + d));
        }
        let far = t.generate(((step + 2) * STEP_SECS) as u64);
        assert_eq!(matching_step(secret, "ann", &far, now_us), None);
        assert_eq!(matching_step(secret, "ann", "12345", now_us), None);
    }

    #[test]
    fn recovery_codes_read_as_typed() {
        let codes = recovery_codes();
        assert_eq!(codes.len(), RECOVERY_CODES);
        for code in &codes {
            assert_eq!(normalise(code).len(), RECOVERY_CHARS);
            assert_eq!(
                normalise(&code.to_uppercase().replace('-', " ")),
                normalise(code)
            );
        }
        assert_eq!(normalise("O0-Il"), "0011");
    }
}
