internal import CCurl

/// The one owner of a libcurl easy handle (and its header list); frees both in `deinit`.
/// One thread per handle, as libcurl requires.
final class CurlEasy {
    private let handle: UnsafeMutableRawPointer
    private var headerList: UnsafeMutablePointer<curl_slist>? = nil
    private var resolveList: UnsafeMutablePointer<curl_slist>? = nil
    private var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)

    /// `curl_global_init` once per process, before any handle.
    private static let globalInit: Void = { _ = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    init() {
        _ = Self.globalInit
        handle = curl_easy_init()
        _ = CCurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
    }

    deinit {
        if let headerList { curl_slist_free_all(headerList) }
        if let resolveList { curl_slist_free_all(resolveList) }
        curl_easy_cleanup(handle)
    }

    struct Failure: Error {
        var code: Int
        var message: String
    }

    /// What one request brought back.
    struct Response {
        var status: Int
        /// Header lines of the final response (without line endings), in order, as received.
        var headerLines: [[UInt8]]
        var bodyBytes: Int
        var httpVersion: String
        var primaryIP: String
    }

    struct Request {
        var url: String
        var method: String
        var body: [UInt8]?
        var headers: [String]
        var proxy: String?
        /// CURLOPT_RESOLVE entries, `HOST:PORT:ADDRESS`.
        var resolve: [String] = []
        var caFile: String?
        var insecure: Bool
        var timeout: Double
    }

    /// Performs one request without following redirects.
    func perform(_ request: Request) throws(Failure) -> Response {
        curl_easy_reset(handle)
        _ = CCurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = errorBuffer.withUnsafeMutableBufferPointer {
            CCurl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, $0.baseAddress)
        }
        errorBuffer[0] = 0
        _ = CCurl_setopt_string(handle, CURLOPT_URL, request.url)
        _ = CCurl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0)
        _ = CCurl_setopt_long(handle, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        // Bodies and headers arrive as sent (no decoding): the audit reads headers only.
        _ = CCurl_setopt_long(handle, CURLOPT_HTTP_CONTENT_DECODING, 0)
        _ = CCurl_setopt_long(handle, CURLOPT_TIMEOUT_MS, Int(request.timeout * 1000))
        _ = CCurl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Int(min(request.timeout, 30) * 1000))
        if let proxy = request.proxy { _ = CCurl_setopt_string(handle, CURLOPT_PROXY, proxy) }
        if let ca = request.caFile { _ = CCurl_setopt_string(handle, CURLOPT_CAINFO, ca) }
        if request.insecure {
            _ = CCurl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 0)
            _ = CCurl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 0)
        }
        if request.method == "HEAD" {
            _ = CCurl_setopt_long(handle, CURLOPT_NOBODY, 1)
        } else if request.method != "GET" || request.body != nil {
            _ = CCurl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method)
        }
        var body = request.body ?? []
        if request.body != nil {
            // The size first, so that COPYPOSTFIELDS copies exactly that many bytes (NULs included).
            _ = CCurl_setopt_offset(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count))
            body.append(0)
            _ = body.withUnsafeMutableBytes { CCurl_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, $0.baseAddress) }
        }
        if let headerList { curl_slist_free_all(headerList) }
        headerList = nil
        for h in request.headers { headerList = curl_slist_append(headerList, h) }
        if let headerList { _ = CCurl_setopt_list(handle, CURLOPT_HTTPHEADER, headerList) }
        if let resolveList { curl_slist_free_all(resolveList) }
        resolveList = nil
        for entry in request.resolve { resolveList = curl_slist_append(resolveList, entry) }
        if let resolveList { _ = CCurl_setopt_list(handle, CURLOPT_RESOLVE, resolveList) }

        let sink = ResponseSink()
        let context = Unmanaged.passUnretained(sink).toOpaque()
        _ = CCurl_setopt_callback(handle, CURLOPT_HEADERFUNCTION, curlHeaderCallback)
        _ = CCurl_setopt_pointer(handle, CURLOPT_HEADERDATA, context)
        _ = CCurl_setopt_callback(handle, CURLOPT_WRITEFUNCTION, curlBodyCallback)
        _ = CCurl_setopt_pointer(handle, CURLOPT_WRITEDATA, context)
        let code = withExtendedLifetime(sink) { curl_easy_perform(handle) }
        if code != CURLE_OK {
            let detail = errorBuffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            let text = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
            throw Failure(code: Int(code.rawValue), message: text)
        }
        var status = 0
        _ = CCurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        var version = 0
        _ = CCurl_getinfo_long(handle, CURLINFO_HTTP_VERSION, &version)
        var ip: UnsafeMutablePointer<CChar>? = nil
        _ = CCurl_getinfo_string(handle, CURLINFO_PRIMARY_IP, &ip)
        return Response(
            status: status, headerLines: sink.lines, bodyBytes: sink.bodyBytes,
            httpVersion: version == Int(CURL_HTTP_VERSION_2_0)
                ? "HTTP/2" : version == Int(CURL_HTTP_VERSION_1_0) ? "HTTP/1.0" : "HTTP/1.1",
            primaryIP: ip.map { String(cString: $0) } ?? "")
    }

    static let codeCouldntResolveHost = Int(CURLE_COULDNT_RESOLVE_HOST.rawValue)
    static let codeCouldntConnect = Int(CURLE_COULDNT_CONNECT.rawValue)
    static let codeTimedOut = Int(CURLE_OPERATION_TIMEDOUT.rawValue)
    static let codePeerFailedVerification = Int(CURLE_PEER_FAILED_VERIFICATION.rawValue)
    static let codeSSLConnect = Int(CURLE_SSL_CONNECT_ERROR.rawValue)
}

/// Collects the raw header lines of the last response (interim 1xx heads are discarded) and counts body bytes.
final class ResponseSink {
    var lines: [[UInt8]] = []
    var bodyBytes = 0
}

// C callbacks: free functions (not main-actor isolated), context through the *DATA pointer.
private func curlHeaderCallback(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?
)
    -> Int
{
    let length = size * count
    guard let data, let context else { return length }
    let sink = Unmanaged<ResponseSink>.fromOpaque(context).takeUnretainedValue()
    var line = Array(UnsafeRawBufferPointer(start: data, count: length))
    while let last = line.last, last == 0x0A || last == 0x0D { line.removeLast() }
    if line.starts(with: Array("HTTP/".utf8)) { sink.lines.removeAll() }
    if !line.isEmpty { sink.lines.append(line) }
    return length
}

private func curlBodyCallback(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?
)
    -> Int
{
    let length = size * count
    if let context { Unmanaged<ResponseSink>.fromOpaque(context).takeUnretainedValue().bodyBytes += length }
    return length
}
