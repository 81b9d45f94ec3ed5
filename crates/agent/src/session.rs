//! The opening of a control session over TCP: the hello/token exchange and the clock probes, from
//! both sides. What follows the opening (data, the start, the streamed seconds) is the
//! coordinator's ([`crate::coordinator`]) and the agent's (the CLI's `ceiling agent`).

use crate::{
    clock_offset, read_message, token_matches, write_message, Message, ProtocolError,
    PROTOCOL_VERSION,
};
use tokio::io::{AsyncBufRead, AsyncWrite};

/// Microseconds since the Unix epoch on this host's wall clock.
pub fn now_us() -> i64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

/// Errors of a session's opening.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The channel failed.
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// The peer refused, with its reason.
    #[error("refused by the peer: {0}")]
    Refused(String),
    /// The peer sent something out of order.
    #[error("unexpected message from the peer: expected {expected}, got {got}")]
    Unexpected {
        /// What the protocol expects here.
        expected: &'static str,
        /// What arrived (its type).
        got: String,
    },
    /// The peer closed the channel.
    #[error("the peer closed the channel during {0}")]
    Closed(&'static str),
}

/// Agent side: reads the hello, checks version and token (constant time), answers `welcome` or
/// `refused`, then answers clock probes until another message arrives, which it returns
/// (`Ok(None)` when the coordinator closed the channel after probing).
pub async fn agent_open<R, W>(
    r: &mut R,
    w: &mut W,
    token: &str,
    name: &str,
) -> Result<Option<Message>, SessionError>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let hello = read_message(r)
        .await?
        .ok_or(SessionError::Closed("hello"))?;
    let Message::Hello { version, token: t } = hello else {
        return Err(SessionError::Unexpected {
            expected: "hello",
            got: Message::kind(&hello),
        });
    };
    let refusal = if version != PROTOCOL_VERSION {
        Some(format!(
            "protocol version {version}; this agent speaks {PROTOCOL_VERSION}"
        ))
    } else if !token_matches(&t, token) {
        Some("wrong token".to_string())
    } else {
        None
    };
    if let Some(reason) = refusal {
        write_message(
            w,
            &Message::Refused {
                reason: reason.clone(),
            },
        )
        .await?;
        return Err(SessionError::Refused(reason));
    }
    write_message(
        w,
        &Message::Welcome {
            agent: name.to_string(),
        },
    )
    .await?;
    loop {
        match read_message(r).await? {
            Some(Message::Ping { t0_us }) => {
                let t1_us = now_us();
                let pong = Message::Pong {
                    t0_us,
                    t1_us,
                    t2_us: now_us(),
                };
                write_message(w, &pong).await?;
            }
            other => return Ok(other),
        }
    }
}

/// What the coordinator learnt while opening a session.
#[derive(Debug, Clone, PartialEq)]
pub struct Opened {
    /// The agent's name from its welcome.
    pub agent: String,
    /// Agent clock − coordinator clock, µs, from the smallest-round-trip probe.
    pub offset_us: i64,
    /// That probe's round trip, µs (the offset's error is at most half of it).
    pub rtt_us: i64,
}

/// The coordinator's refusal to start: every agent's clock offset, less its uncertainty (half its
/// probe's round trip), must be within `bound_us`; otherwise the error names each agent that is
/// not, its offset, round trip and the bound, so the report can state it.
pub fn check_offsets(opened: &[Opened], bound_us: i64) -> Result<(), String> {
    let bad: Vec<String> = opened
        .iter()
        .filter(|o| o.offset_us.abs() + o.rtt_us / 2 > bound_us)
        .map(|o| {
            format!(
                "agent `{}`: clock offset {} µs ± {} µs exceeds the bound of {} µs",
                o.agent,
                o.offset_us,
                o.rtt_us / 2,
                bound_us
            )
        })
        .collect();
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "not starting: {}; synchronise the clocks (e.g. chrony) or raise the bound",
            bad.join("; ")
        ))
    }
}

/// Coordinator side: sends the hello, expects `welcome`, then sends `probes` clock probes (at least
/// one) and keeps the offset of the one with the smallest round trip.
pub async fn coordinator_open<R, W>(
    r: &mut R,
    w: &mut W,
    token: &str,
    probes: usize,
) -> Result<Opened, SessionError>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let hello = Message::Hello {
        version: PROTOCOL_VERSION,
        token: token.to_string(),
    };
    write_message(w, &hello).await?;
    let agent = match read_message(r)
        .await?
        .ok_or(SessionError::Closed("hello"))?
    {
        Message::Welcome { agent } => agent,
        Message::Refused { reason } => return Err(SessionError::Refused(reason)),
        m => {
            return Err(SessionError::Unexpected {
                expected: "welcome",
                got: Message::kind(&m),
            })
        }
    };
    let mut best: Option<(i64, i64)> = None;
    for _ in 0..probes.max(1) {
        write_message(w, &Message::Ping { t0_us: now_us() }).await?;
        let m = read_message(r)
            .await?
            .ok_or(SessionError::Closed("clock probes"))?;
        let t3 = now_us();
        let Message::Pong {
            t0_us,
            t1_us,
            t2_us,
        } = m
        else {
            return Err(SessionError::Unexpected {
                expected: "pong",
                got: Message::kind(&m),
            });
        };
        let (offset, rtt) = clock_offset(t0_us, t1_us, t2_us, t3);
        if best.is_none_or(|(_, r)| rtt < r) {
            best = Some((offset, rtt));
        }
    }
    let (offset_us, rtt_us) = best.expect("at least one probe was sent");
    Ok(Opened {
        agent,
        offset_us,
        rtt_us,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;
    use tokio::net::{TcpListener, TcpStream};

    async fn pair(
        agent_token: &'static str,
        coord_token: &str,
    ) -> (
        Result<Opened, SessionError>,
        Result<Option<Message>, SessionError>,
    ) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let agent = tokio::spawn(async move {
            let (s, _) = l.accept().await.unwrap();
            let (r, mut w) = s.into_split();
            agent_open(&mut BufReader::new(r), &mut w, agent_token, "a1").await
        });
        let s = TcpStream::connect(addr).await.unwrap();
        let (r, mut w) = s.into_split();
        let opened = coordinator_open(&mut BufReader::new(r), &mut w, coord_token, 8).await;
        drop(w);
        (opened, agent.await.unwrap())
    }

    #[tokio::test]
    async fn the_right_token_opens_a_session_with_a_small_loopback_offset() {
        let (opened, agent) = pair("tok", "tok").await;
        let o = opened.unwrap();
        assert_eq!(o.agent, "a1");
        // Same host, same clock: the offset is within half the round trip (plus 1 µs rounding).
        assert!(o.rtt_us >= 0, "{o:?}");
        assert!(o.offset_us.abs() <= o.rtt_us / 2 + 1, "{o:?}");
        assert!(agent.unwrap().is_none());
    }

    #[test]
    fn offsets_beyond_the_bound_refuse_the_start_and_name_the_agent() {
        let o = |agent: &str, offset_us, rtt_us| Opened {
            agent: agent.into(),
            offset_us,
            rtt_us,
        };
        assert!(check_offsets(&[o("a", 400, 200), o("b", -900, 100)], 1000).is_ok());
        let e = check_offsets(&[o("a", 400, 200), o("b", -980, 100)], 1000).unwrap_err();
        assert!(
            e.contains("agent `b`") && e.contains("-980") && !e.contains("agent `a`"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn a_wrong_token_is_refused_on_both_sides() {
        let (opened, agent) = pair("tok", "tak").await;
        assert!(matches!(opened, Err(SessionError::Refused(ref r)) if r == "wrong token"));
        assert!(matches!(agent, Err(SessionError::Refused(_))));
    }
}
