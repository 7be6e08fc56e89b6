//! The loopback interface of the sandbox's own network namespace, brought up by the
//! launcher itself over rtnetlink (`RTM_NEWLINK` with `IFF_UP` for interface 1, which is `lo`
//! in every new namespace): no program is looked up on a `PATH` or run while the launcher
//! still holds its namespace's capabilities.

use rustix::net::{netlink, AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};

/// Sets `lo` up, or says why it could not.
pub(super) fn up() -> Result<(), String> {
    let fail = |what: &str, error: rustix::io::Errno| format!("loopback ({what}): {error}");
    let socket = rustix::net::socket_with(
        AddressFamily::NETLINK,
        SocketType::RAW,
        SocketFlags::CLOEXEC,
        None, // NETLINK_ROUTE
    )
    .map_err(|error| fail("socket", error))?;
    let kernel = netlink::SocketAddrNetlink::new(0, 0);
    rustix::net::sendto(&socket, &request(), SendFlags::empty(), &kernel)
        .map_err(|error| fail("send", error))?;
    let mut answer = [0u8; 512];
    let (read, _) = rustix::net::recv(&socket, &mut answer, RecvFlags::empty())
        .map_err(|error| fail("receive", error))?;
    acknowledged(&answer[..read.min(answer.len())])
}

const RTM_NEWLINK: u16 = 16;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
const IFF_UP: u32 = 1;
/// `lo`'s index in a fresh network namespace.
const LOOPBACK: i32 = 1;

/// `nlmsghdr` then `ifinfomsg`: interface 1, flags `IFF_UP`, changing `IFF_UP` only.
fn request() -> [u8; 32] {
    let mut message = [0u8; 32];
    message[0..4].copy_from_slice(&32u32.to_ne_bytes());
    message[4..6].copy_from_slice(&RTM_NEWLINK.to_ne_bytes());
    message[6..8].copy_from_slice(&(NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
    message[8..12].copy_from_slice(&1u32.to_ne_bytes());
    // [12..16] port id 0, [16] AF_UNSPEC, [17] padding, [18..20] device type: all 0.
    message[20..24].copy_from_slice(&LOOPBACK.to_ne_bytes());
    message[24..28].copy_from_slice(&IFF_UP.to_ne_bytes());
    message[28..32].copy_from_slice(&IFF_UP.to_ne_bytes());
    message
}

/// Whether the kernel's answer is an `NLMSG_ERROR` whose error is 0 (an acknowledgement).
fn acknowledged(answer: &[u8]) -> Result<(), String> {
    let field = |range: std::ops::Range<usize>| answer.get(range).unwrap_or_default();
    let kind = <[u8; 2]>::try_from(field(4..6)).map(u16::from_ne_bytes);
    let error = <[u8; 4]>::try_from(field(16..20)).map(i32::from_ne_bytes);
    match (kind, error) {
        (Ok(NLMSG_ERROR), Ok(0)) => Ok(()),
        (Ok(NLMSG_ERROR), Ok(code)) => Err(format!(
            "loopback: the kernel refused ({})",
            std::io::Error::from_raw_os_error(-code)
        )),
        _ => Err("loopback: the kernel's answer is not an acknowledgement".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_sets_interface_one_up_and_asks_for_an_acknowledgement() {
        let message = request();
        assert_eq!(u32::from_ne_bytes(message[0..4].try_into().unwrap()), 32);
        assert_eq!(u16::from_ne_bytes(message[4..6].try_into().unwrap()), 16);
        assert_eq!(u16::from_ne_bytes(message[6..8].try_into().unwrap()), 5);
        assert_eq!(i32::from_ne_bytes(message[20..24].try_into().unwrap()), 1);
        assert_eq!(u32::from_ne_bytes(message[24..28].try_into().unwrap()), 1);
        assert_eq!(u32::from_ne_bytes(message[28..32].try_into().unwrap()), 1);
        let mut ack = [0u8; 36];
        ack[4..6].copy_from_slice(&2u16.to_ne_bytes());
        assert_eq!(acknowledged(&ack), Ok(()));
        ack[16..20].copy_from_slice(&(-1i32).to_ne_bytes());
        assert!(acknowledged(&ack).unwrap_err().contains("refused"));
        assert!(acknowledged(&[0u8; 3]).is_err());
    }
}
