package ceiling.spring.mvcr2dbc;

import ceiling.spring.api.ApiException;
import ceiling.spring.api.ClientDto;
import ceiling.spring.api.CreateClientRequest;
import ceiling.spring.api.Inputs;
import ceiling.spring.api.TransferDto;
import ceiling.spring.api.TransferRequest;
import ceiling.spring.r2dbc.BankRepository;
import org.springframework.http.HttpStatus;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;

@RestController
public class BankController {
    private final BankRepository bank;

    public BankController(BankRepository bank) {
        this.bank = bank;
    }

    @PostMapping("/clients")
    @ResponseStatus(HttpStatus.CREATED)
    public ClientDto create(@RequestBody CreateClientRequest body) {
        return bank.create(Inputs.openingBalance(body)).block();
    }

    @GetMapping("/clients/{id}/balance")
    public ClientDto balance(@PathVariable String id) {
        long clientId = Inputs.clientId(id);
        return bank.find(clientId).blockOptional().orElseThrow(() -> ApiException.notFound("no client with id " + clientId));
    }

    /** A 404/409 signalled inside the transaction is rethrown by block() after the rollback. */
    @PostMapping("/transfers")
    public TransferDto transfer(@RequestBody TransferRequest body) {
        return bank.transfer(Inputs.transfer(body)).block();
    }
}
