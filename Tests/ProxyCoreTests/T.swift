import ProxyCore
