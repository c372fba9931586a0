print("cookie-proxy")
