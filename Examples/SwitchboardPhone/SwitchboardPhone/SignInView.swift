import SwiftUI
import SwitchboardKit

/// The first screen: the server's address, then sign in or create an account there.
@MainActor
struct SignInView: View {
    @ObservedObject var model: AppModel
    @State private var server = ""
    @State private var creatingAccount = false
    @State private var username = ""
    @State private var password = ""
    @State private var displayName = ""
    @State private var working = false
    @State private var failure: String?

    var body: some View {
        NavigationStack {
            Form {
                Section {
                    ServerField(text: $server)
                } header: {
                    Text("Server")
                } footer: {
                    Text("An IP address and port (192.168.1.20:8080), a host name, or a full URL.")
                }
                Section {
                    CredentialsFields(
                        creatingAccount: $creatingAccount, username: $username, password: $password,
                        displayName: $displayName)
                }
                if let failure {
                    Section {
                        Text(failure).foregroundStyle(Color.red)
                    }
                }
                Section {
                    Button(action: submit) {
                        HStack {
                            Text(creatingAccount ? "Create account" : "Sign in")
                            if working {
                                Spacer()
                                ProgressView()
                            }
                        }
                    }
                    .disabled(working || !ready)
                }
            }
            .navigationTitle("Switchboard")
            .onAppear {
                if server.isEmpty { server = model.server?.description ?? "" }
            }
        }
    }

    private var ready: Bool {
        (try? ServerAddress(parsing: server)) != nil
            && CredentialsFields.ready(
                creatingAccount: creatingAccount, username: username, password: password, displayName: displayName)
    }

    private func submit() {
        let credentials = CredentialsFields.credentials(
            creatingAccount: creatingAccount, username: username, password: password, displayName: displayName)
        working = true
        failure = nil
        Task {
            do {
                try await model.signIn(serverText: server, credentials: credentials)
                password = ""
            } catch {
                failure = model.describe(error)
            }
            working = false
        }
    }
}
