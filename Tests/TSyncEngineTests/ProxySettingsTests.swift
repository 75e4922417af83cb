import Testing
import TSyncModel

@testable import TSyncEngine

/// The proxy variables as curl reads them: which proxy each scheme takes, the proxy URL, and the
/// `NO_PROXY` matcher (docs/DESIGN.md §3). The end-to-end side is `ProxyTests`.
@Suite("Proxy settings")
struct ProxySettingsTests {
    private let http = try! RemoteEndpoint("http://sync.example.com:8080/api")
    private let https = try! RemoteEndpoint("https://sync.example.com")

    @Test func proxyURLsParseAsCurlReadsThem() throws {
        #expect(try RemoteProxy(url: "proxy.corp:3128") == RemoteProxy(host: "proxy.corp", port: 3128))
        #expect(try RemoteProxy(url: "http://proxy.corp") == RemoteProxy(host: "proxy.corp", port: 1080))
        #expect(try RemoteProxy(url: "HTTP://proxy.corp:8080/") == RemoteProxy(host: "proxy.corp", port: 8080))
        let authenticated = try RemoteProxy(url: "http://ann%40corp:p%3Ass%20w@[::1]:3128")
        #expect(authenticated == RemoteProxy(host: "::1", port: 3128, username: "ann@corp", password: "p:ss w"))
        #expect(authenticated.description == "[::1]:3128", "the description never carries the credentials")
        #expect(try RemoteProxy(url: "http://ann@proxy:1").password == "")
        for bad in [
            "socks5://proxy:1080", "https://proxy:443", "http://proxy:0", "http://proxy:99999", "http://:8080", "http://proxy/path",
        ] {
            #expect(throws: TSyncError.self, "\(bad)") { try RemoteProxy(url: bad) }
        }
    }

    @Test func eachSchemeTakesItsOwnVariableThenAllProxy() throws {
        let both = try ProxySettings(environment: ["http_proxy": "a:1", "HTTPS_PROXY": "b:2"])
        #expect(both.proxy(for: http)?.description == "a:1")
        #expect(both.proxy(for: https)?.description == "b:2")

        let onlyHTTPS = try ProxySettings(environment: ["https_proxy": "b:2"])
        #expect(onlyHTTPS.proxy(for: http) == nil, "an https proxy is not used for http:// remotes")
        #expect(onlyHTTPS.proxy(for: https)?.description == "b:2")

        let fallback = try ProxySettings(environment: ["http_proxy": "a:1", "ALL_PROXY": "c:3"])
        #expect(fallback.proxy(for: http)?.description == "a:1")
        #expect(fallback.proxy(for: https)?.description == "c:3")

        #expect(try ProxySettings(environment: ["all_proxy": "l:1", "ALL_PROXY": "u:2"]).proxy(for: https)?.description == "l:1")
        #expect(try ProxySettings(environment: ["https_proxy": "l:1", "HTTPS_PROXY": "u:2"]).proxy(for: https)?.description == "l:1")
        #expect(try ProxySettings(environment: [:]) == .direct)
    }

    @Test func uppercaseHTTPProxyCountsExceptInACGIProgram() throws {
        #expect(try ProxySettings(environment: ["HTTP_PROXY": "u:2"]).proxy(for: http)?.description == "u:2")
        #expect(try ProxySettings(environment: ["http_proxy": "", "HTTP_PROXY": "u:2"]).proxy(for: http)?.description == "u:2")
        // httpoxy: a CGI request's `Proxy:` header arrives as HTTP_PROXY.
        let cgi = try ProxySettings(environment: ["HTTP_PROXY": "evil:1", "REQUEST_METHOD": "GET"])
        #expect(cgi.proxy(for: http) == nil)
        #expect(try ProxySettings(environment: ["http_proxy": "a:1", "REQUEST_METHOD": "GET"]).proxy(for: http)?.description == "a:1")
    }

    @Test func aBadProxyVariableIsNamedWithoutItsPassword() {
        do {
            _ = try ProxySettings(environment: ["https_proxy": "socks5://ann:hunter2@proxy:1080"])
            Issue.record("a socks proxy was taken")
        } catch {
            #expect(error.kind == .usage)
            #expect(error.message.contains("https_proxy") && error.message.contains("socks5"), "\(error.message)")
            #expect(!error.message.contains("hunter2"))
        }
    }

    @Test func noProxyMatchesNamesSuffixesAddressesAndBlocks() {
        let settings = ProxySettings(
            http: RemoteProxy(host: "p", port: 1), https: nil, noProxy: "example.com, .corp.local,10.0.0.0/8 ,::1 192.168.1.5,[fd00::]/8")
        for host in [
            "example.com", "API.example.com", "example.com.", "x.corp.local", "corp.local", "10.2.3.4", "[::1]", "192.168.1.5", "[fd12::1]",
        ] {
            #expect(settings.bypasses(host: host), "\(host) goes direct")
        }
        for host in ["badexample.com", "example.com.evil", "11.0.0.1", "192.168.1.6", "127.0.0.1", "localhost", "[::2]", "[fe80::1]"] {
            #expect(!settings.bypasses(host: host), "\(host) goes through the proxy")
        }
        #expect(ProxySettings(http: nil, https: nil, noProxy: "*").bypasses(host: "anything.at.all"))
        #expect(!ProxySettings(http: nil, https: nil, noProxy: "").bypasses(host: "example.com"))
    }

    @Test func noProxyDecidesPerRemote() throws {
        let settings = try ProxySettings(environment: ["http_proxy": "a:1", "no_proxy": "127.0.0.1", "NO_PROXY": "*"])
        #expect(settings.proxy(for: try RemoteEndpoint("http://127.0.0.1:8080")) == nil, "lowercase no_proxy wins")
        #expect(settings.proxy(for: try RemoteEndpoint("http://127.0.0.2:8080"))?.description == "a:1")
        #expect(try RemoteEndpoint("https://[::1]:8443/api").host == "[::1]")
        #expect(try RemoteEndpoint("http://Sync.Example.com:80").host == "Sync.Example.com")
    }
}
