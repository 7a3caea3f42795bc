import SwiftUI
import SwitchboardKit

/// Sign-in until there is a session; then contacts (with the live calls) and settings.
@MainActor
struct RootView: View {
    @ObservedObject var model: AppModel

    var body: some View {
        content
            .alert("Switchboard", isPresented: $model.alertShown) {
                Button("OK", role: .cancel) {}
            } message: {
                Text(model.alertText)
            }
    }

    @ViewBuilder private var content: some View {
        if model.user == nil {
            SignInView(model: model)
        } else {
            TabView {
                ContactsView(model: model)
                    .tabItem { Label("Contacts", systemImage: "person.2") }
                SettingsView(model: model)
                    .tabItem { Label("Settings", systemImage: "gear") }
            }
        }
    }
}

/// Under a server field: the base URL the text completes to, or what is wrong with it.
struct ServerAddressHint: View {
    let text: String

    var body: some View {
        if text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            EmptyView()
        } else {
            switch Self.parse(text) {
            case .success(let address):
                VStack(alignment: .leading, spacing: 4) {
                    Label("Connects to \(address.description)", systemImage: "checkmark.circle")
                        .foregroundStyle(.secondary)
                    if address.scheme == .http, !address.host.isLocal {
                        Text("iOS allows plain http only on the local network: use https:// or a local address.")
                            .foregroundStyle(Color.orange)
                    }
                }
                .font(.footnote)
            case .failure(let error):
                Label(error.description, systemImage: "exclamationmark.triangle")
                    .font(.footnote)
                    .foregroundStyle(Color.red)
            }
        }
    }

    private static func parse(_ text: String) -> Result<ServerAddress, ServerAddressError> {
        do {
            return .success(try ServerAddress(parsing: text))
        } catch let error as ServerAddressError {
            return .failure(error)
        } catch {
            return .failure(.invalidHost(text))
        }
    }
}

/// The account fields shared by sign-in and the server change.
struct CredentialsFields: View {
    @Binding var creatingAccount: Bool
    @Binding var username: String
    @Binding var password: String
    @Binding var displayName: String

    var body: some View {
        Picker("Account", selection: $creatingAccount) {
            Text("Sign in").tag(false)
            Text("Create account").tag(true)
        }
        .pickerStyle(.segmented)
        TextField("Username", text: $username)
            .textContentType(.username)
            .textInputAutocapitalization(.never)
            .autocorrectionDisabled()
        SecureField("Password", text: $password)
            .textContentType(creatingAccount ? .newPassword : .password)
        if creatingAccount {
            TextField("Display name", text: $displayName)
                .textContentType(.name)
        }
    }

    /// Whether the fields are filled in enough to send.
    static func ready(creatingAccount: Bool, username: String, password: String, displayName: String) -> Bool {
        let filled = { (text: String) in !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty }
        return filled(username) && !password.isEmpty && (!creatingAccount || filled(displayName))
    }

    static func credentials(
        creatingAccount: Bool, username: String, password: String, displayName: String
    ) -> Credentials {
        let name = username.trimmingCharacters(in: .whitespacesAndNewlines)
        return creatingAccount
            ? .signUp(
                username: name, password: password,
                displayName: displayName.trimmingCharacters(in: .whitespacesAndNewlines))
            : .signIn(username: name, password: password)
    }
}

/// The server field, typed as a person would.
struct ServerField: View {
    @Binding var text: String

    var body: some View {
        TextField("192.168.1.20:8080 or switchboard.example.com", text: $text)
            .keyboardType(.URL)
            .textContentType(.URL)
            .textInputAutocapitalization(.never)
            .autocorrectionDisabled()
        ServerAddressHint(text: text)
    }
}
