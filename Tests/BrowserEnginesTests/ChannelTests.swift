import Foundation
import Testing

@testable import BrowserEngines

/// The transcript channel and the command session over hand-written transcripts: what a replay takes, where a driver
/// that strays from its recording is stopped, how replies, events and errors of both protocols are told apart.
@Suite struct ChannelTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var transcript: String
        /// `>TEXT` sends TEXT; `<SECONDS` receives with a deadline that far from the channel's clock; `~SECONDS`
        /// pauses.
        var steps: [String]
        /// What each step gave: a message, `nothing`, `ok`, or `failure: TEXT` (then the replay stops).
        var outcomes: [String]
        /// The channel's clock after the steps (seconds).
        var time: Double
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "messages in order, the clock at each entry's time",
            transcript: "> 0.000 {\"id\":1}\n< 0.250 {\"id\":1,\"result\":{}}\n", steps: [">{\"id\":1}", "<5"],
            outcomes: ["ok", "{\"id\":1,\"result\":{}}"], time: 0.25),
        Case(
            name: "a wait that timed out moves the clock to its deadline",
            transcript: "> 0.000 A\n. 0.600\n< 0.900 B\n", steps: [">A", "<0.5", "<1"],
            outcomes: ["ok", "nothing", "B"], time: 0.9),
        Case(
            name: "a message other than the recorded one stops the replay where it strays",
            transcript: "> 0.000 A\n> 0.100 B\n", steps: [">A", ">C"],
            outcomes: ["ok", "failure: t:2: the driver sent C, the recording has sent(\"B\")"], time: 0),
        Case(
            name: "a wait where the recording had stopped waiting gets nothing at its deadline",
            transcript: "> 0.000 A\n", steps: ["<0.5", ">A"], outcomes: ["nothing", "ok"], time: 0.5),
        Case(
            name: "a timeout the replay does not wait for is passed over",
            transcript: "> 0.000 A\n. 0.500\n> 0.600 B\n", steps: [">A", ">B"], outcomes: ["ok", "ok"], time: 0.6),
        Case(
            name: "the browser's end is the recorded failure",
            transcript: "> 0.000 A\nx 1.000 Chromium closed its DevTools pipe (it ended or crashed)\n",
            steps: [">A", "<5"], outcomes: ["ok", "failure: Chromium closed its DevTools pipe (it ended or crashed)"],
            time: 1),
        Case(
            name: "reading past the recording fails", transcript: "> 0.000 A\n", steps: [">A", "<1"],
            outcomes: ["ok", "failure: t: end: the driver read past the recording"], time: 0),
        Case(
            name: "a pause moves the clock only", transcript: "", steps: ["~0.1", "~0.2"], outcomes: ["ok", "ok"],
            time: 0.3),
    ]

    @Test(arguments: cases)
    func aReplayGivesWhatWasRecordedAndStopsWhereTheDriverStrays(_ c: Case) throws {
        let channel = try TranscriptChannel(c.transcript, name: "t")
        var outcomes: [String] = []
        for step in c.steps {
            let argument = String(step.dropFirst())
            do {
                switch step.first {
                case ">":
                    try channel.send(argument)
                    outcomes.append("ok")
                case "<":
                    let deadline = channel.now.addingTimeInterval(Double(argument)!)
                    outcomes.append(try channel.receive(until: deadline) ?? "nothing")
                default:
                    channel.pause(Double(argument)!)
                    outcomes.append("ok")
                }
            } catch {
                outcomes.append("failure: \(error.description)")
                break
            }
        }
        #expect(outcomes == c.outcomes)
        #expect(abs(channel.now.timeIntervalSince1970 - c.time) < 1e-6)
    }

    @Test(arguments: [
        ("x", "t:1: not a transcript entry"), ("? 0.1 A", "t:1: unknown entry kind '?'"),
        ("> soon A", "t:1: not a transcript entry"),
    ])
    func aBrokenTranscriptIsRefusedWithItsLine(_ text: String, _ message: String) {
        #expect(throws: BrowserFailure.self) { try TranscriptChannel(text, name: "t") }
        #expect((try? TranscriptChannel(text, name: "t")) == nil)
        do {
            _ = try TranscriptChannel(text, name: "t")
        } catch {
            #expect(error.description == message)
        }
    }

    struct Reply: Decodable, Equatable { var value: Int }
    struct Params: Decodable, Equatable { var n: Int }

    /// A reply is the message with the command's id; events read meanwhile are kept, in order, for `nextEvent`;
    /// each protocol's error is the command's failure, in the browser's words.
    @Test(arguments: [
        (
            "CDP: events before the reply are kept",
            "> 0 {\"id\":1,\"method\":\"M\",\"params\":{},\"sessionId\":\"S\"}\n< 0.1 {\"method\":\"E\",\"params\":{\"n\":1}}\n"
                + "< 0.2 {\"id\":1,\"result\":{\"value\":7}}\n< 0.3 {\"method\":\"E\",\"params\":{\"n\":2}}\n. 1.3\n",
            "7", "E1 E2"
        ),
        (
            "BiDi: a typed success and an event",
            "> 0 {\"id\":1,\"method\":\"M\",\"params\":{}}\n< 0.1 {\"type\":\"event\",\"method\":\"E\",\"params\":{\"n\":3}}\n"
                + "< 0.2 {\"type\":\"success\",\"id\":1,\"result\":{\"value\":8}}\n. 1.2\n",
            "8", "E3"
        ),
        (
            "CDP: an error object",
            "> 0 {\"id\":1,\"method\":\"M\",\"params\":{}}\n< 0.1 {\"id\":1,\"error\":{\"code\":-32000,\"message\":\"No target\"}}\n. 1.1\n",
            "failure: B refused M: No target", ""
        ),
        (
            "BiDi: an error code and its message",
            "> 0 {\"id\":1,\"method\":\"M\",\"params\":{}}\n"
                + "< 0.1 {\"type\":\"error\",\"id\":1,\"error\":\"no such frame\",\"message\":\"gone\"}\n. 1.1\n",
            "failure: B refused M: no such frame gone", ""
        ),
        (
            "a reply of another shape",
            "> 0 {\"id\":1,\"method\":\"M\",\"params\":{}}\n< 0.1 {\"id\":1,\"result\":{\"value\":\"x\"}}\n. 1.1\n",
            "failure: B answered M in an unexpected shape: {\"id\":1,\"result\":{\"value\":\"x\"}}", ""
        ),
        (
            "no reply in time",
            "> 0 {\"id\":1,\"method\":\"M\",\"params\":{}}\n< 0.1 {\"id\":2,\"result\":{}}\n. 20.1\n",
            "failure: B did not answer M in time", ""
        ),
    ])
    func aCommandGetsItsReplyAndKeepsTheEvents(_ name: String, _ transcript: String, _ result: String, _ events: String)
        throws
    {
        let rpc = RPCSession(try TranscriptChannel(transcript, name: "t"), peer: "B")
        let session: String? = transcript.contains("sessionId") ? "S" : nil
        var got: String
        do {
            got = String(try rpc.call("M", session: session, as: Reply.self).value)
        } catch {
            got = "failure: \(error.description)"
        }
        #expect(got == result, "\(name)")
        var seen: [String] = []
        if events.isEmpty { return }
        while let event = try rpc.nextEvent(until: rpc.channel.now.addingTimeInterval(1)) {
            seen.append(event.method + String(event.params(Params.self)?.n ?? -1))
        }
        #expect(seen.joined(separator: " ") == events, "\(name)")
    }
}
