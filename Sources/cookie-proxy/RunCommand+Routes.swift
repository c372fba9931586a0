import ArgumentParsing
import ProxyApp

/// `run --route [HOST]/PREFIX=URL` (and `--reverse URL`, the one-route shorthand): one origin in front of several
/// upstreams, as a local dev setup needs (the frontend's dev server and an https API), docs/local-development.md.
extension RunCommand {
    enum RouteOption {
        static let route = OptionSpec(
            names: ["--route"], value: "[HOST]/PREFIX=URL",
            help:
                "Reverse mode: requests for HOST (any when left out) whose path starts with PREFIX go to URL"
                + " (http://, https:// or h2c://); a path in URL replaces PREFIX, as nginx's proxy_pass. The longest"
                + " prefix wins, a host's routes first. Options after a comma: ',preserve-host' keeps the client's"
                + " Host.",
            repeatable: true)
        static let noForwarded = OptionSpec(
            names: ["--no-forwarded-headers"], value: nil,
            help: "Towards routes, add no X-Forwarded-For, X-Forwarded-Proto and X-Forwarded-Host.")
    }

    /// The routes of `--reverse` and `--route` into `config`.
    static func routes(_ args: ParsedArguments, into config: inout ProxyApp.Configuration) throws(UsageError) {
        switch ProxyApp.Configuration.routes(reverse: args.value(Option.reverse), routes: args.all(RouteOption.route)) {
        case .success(let routes): config.routes = routes
        case .failure(let error): throw UsageError(message: error.description, command: spec.name)
        }
        if args.flag(RouteOption.noForwarded) { config.forwardedHeaders = false }
    }
}
