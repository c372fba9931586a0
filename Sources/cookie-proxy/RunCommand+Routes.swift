import ArgumentParsing
import ProxyCore
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
        var routes: [ReverseRoute] = []
        if let reverse = args.value(Option.reverse) {
            switch ReverseRoute.parse("/=" + reverse) {
            case .success(let route): routes.append(route)
            case .failure:
                throw UsageError(
                    message:
                        "--reverse '\(reverse)' must be an http://, https:// or h2c:// URL such as http://localhost:3000",
                    command: spec.name)
            }
        }
        routes = try parseRoutes(args.all(RouteOption.route), after: routes, command: spec.name)
        config.routes = routes
        if args.flag(RouteOption.noForwarded) { config.forwardedHeaders = false }
    }

    /// `--route` values (`run`'s and `try`'s), after `routes`: each read, or refused with the reason; a second route
    /// for a host and prefix refused (only the first would ever be tried).
    static func parseRoutes(_ texts: [String], after routes: [ReverseRoute] = [], command: String)
        throws(UsageError) -> [ReverseRoute]
    {
        var routes = routes
        for text in texts {
            switch ReverseRoute.parse(text) {
            case .success(let route):
                if let earlier = routes.first(where: { $0.host == route.host && $0.prefix == route.prefix }) {
                    throw UsageError(
                        message:
                            "--route '\(text)' repeats the prefix \(route.host ?? "")\(route.prefix) of \(earlier); give"
                            + " each prefix one route",
                        command: command)
                }
                routes.append(route)
            case .failure(let error): throw UsageError(message: "--route \(error)", command: command)
            }
        }
        return routes
    }
}
