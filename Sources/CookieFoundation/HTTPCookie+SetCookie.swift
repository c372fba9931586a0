import CookieKit
