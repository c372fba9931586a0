import ProxyPlatform
import ProxyTLS

/// What one socket has yet to take, in one direction: the cleartext the connection machine wrote (its buffer in
/// ``ProxyCore/ConnectionIO``, taken from ``sent`` on), and, when the direction is TLS, the records made from it
/// (``records``; towards an intercepted client, first the cleartext `200` that preceded the handshake). A shutdown
/// asked for (``shutdownPending``) is made once everything is out (``writeShut``). One flush for both directions
/// and both kinds, which says the errno of a failed send.
struct Outbound {
    /// How much of the machine's buffer the socket, or the TLS engine, has taken.
    var sent = 0
    /// Bytes for the socket as they go on the wire, when they are not the machine's buffer itself (TLS).
    var records: [UInt8] = []
    var recordsSent = 0
    var shutdownPending = false
    var writeShut = false

    /// Bytes not yet on the socket, of `plain` (the machine's buffer) and of the records.
    func pending(_ plain: [UInt8]) -> Int { plain.count - sent + records.count - recordsSent }

    /// Bytes of the records not yet on the socket.
    var recordsPending: Bool { recordsSent < records.count }

    /// Moves `plain[sent...]` towards `fd` (through `tls` once its handshake is done), as far as the socket takes
    /// it, then shuts the write side if that was asked for and nothing is left. Returns the errno of a failed
    /// send; EAGAIN and EINTR are not failures (the rest waits for the socket). `progress` is set when the socket
    /// took bytes.
    @inline(__always)
    mutating func flush(_ plain: inout [UInt8], to fd: Int32, tls: TLSEngine?, progress: inout Bool) -> Int32? {
        if let tls { return flush(&plain, to: fd, through: tls, progress: &progress) }
        if let error = Sys.send(fd, &plain, &sent, &progress) { return error }
        if plain.isEmpty && !recordsPending { shutdownIfAsked(fd) }
        return nil
    }

    /// ``flush(_:to:tls:progress:)`` through TLS: the cleartext becomes records once the handshake is done.
    private mutating func flush(_ plain: inout [UInt8], to fd: Int32, through tls: TLSEngine, progress: inout Bool)
        -> Int32?
    {
        if sent < plain.count && tls.handshakeComplete {
            _ = tls.write(plain[sent...])
            plain.removeAll(keepingCapacity: true)
            sent = 0
        }
        if shutdownPending && !writeShut && plain.isEmpty { tls.close() }
        tls.drainCiphertext(into: &records)
        if let error = Sys.send(fd, &records, &recordsSent, &progress) { return error }
        if records.isEmpty && plain.isEmpty { shutdownIfAsked(fd) }
        return nil
    }

    private mutating func shutdownIfAsked(_ fd: Int32) {
        if shutdownPending && !writeShut {
            writeShut = true
            Sys.shutdownWrite(fd)
        }
    }
}
