import ProxyCore

/// What `run` adds around the server: rules, the log, reloads. (Rules arrive with the rules issue.)
final class ProxyRuntime: @unchecked Sendable {
    let hooks: any ProxyHooks
    let banner: String

    init(hooks: any ProxyHooks, banner: String) {
        self.hooks = hooks
        self.banner = banner
    }

    static func make(args: ParsedArguments, command: String) throws(UsageError) -> ProxyRuntime {
        ProxyRuntime(hooks: NoHooks(), banner: "  rules:        none (everything passes through unchanged)\n")
    }

    func reload(reason: String) {}
    func poll() {}
    func finish() {}
    var statusSummary: String { "0 cookies rewritten" }
}
